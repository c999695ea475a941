"""The writer lease under a holder that blocks: the heartbeat keeps it, contenders and recovery
stay out, a takeover is noticed, and fencing refuses the old token (DESIGN section 3, rules 1
and 8). Real SQLite and PostgreSQL; real wall time, because the lease runs on the database's
clock. Waits are for an effect, never a bound on how fast it comes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agents.clock import SystemClock
from agents.errors import LockLost
from agents.model import Scope
from agents.tnr import TransactionEngine, Undoer, recover
from agents.tnr.ledger import StorageLedger
from agents.tnr.lock import LockBusy, WriterLock
from storage import Store
from storage.migrations import upgrade
from tests.storage.conftest import PostgresSchema, postgres_base_url

SCOPE = Scope(cluster="lab", namespace="hotel-reservation")
#: Short enough for a quick test, long enough that a loaded 2-core machine renews in time:
#: the heartbeat beats every second and the lease only lapses after three silent seconds.
TTL_S = 3.0


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Store]:
    schema: PostgresSchema | None = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'stratus.db'}"
    else:
        schema = PostgresSchema(postgres_base_url())
        url = schema.url
    upgrade(url)
    store = Store.connect(url)
    try:
        yield store
    finally:
        store.close()
        if schema is not None:
            schema.drop()


@pytest.fixture
def ledger(store: Store) -> StorageLedger:
    return StorageLedger(store)


def writer(ledger: StorageLedger, holder: str, *, wait_s: float = 0.0) -> WriterLock:
    return WriterLock(
        ledger, SystemClock(), scope=SCOPE, holder=holder, ttl_s=TTL_S, wait_s=wait_s, poll_s=0.2
    )


def blocked_cluster_call(seconds: float, meanwhile: Callable[[], None]) -> None:
    """The holder's thread stuck in one call (a stalled API server): it does nothing with the
    lock for `seconds`, while `meanwhile` runs again and again beside it."""
    done = threading.Event()
    errors: list[BaseException] = []

    def contend() -> None:
        while not done.is_set():
            try:
                meanwhile()
            except BaseException as e:  # handed to the test thread below
                errors.append(e)
                return
            done.wait(0.3)

    contender = threading.Thread(target=contend, daemon=True)
    contender.start()
    time.sleep(seconds)  # the stall itself: nothing in this thread touches the lock
    done.set()
    contender.join(timeout=30)
    if errors:
        raise errors[0]


def wait_for(condition: Callable[[], bool], *, what: str, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.1)


@pytest.mark.timeout(120)
def test_a_holder_blocked_for_three_leases_keeps_its_lock(ledger: StorageLedger) -> None:
    holder = writer(ledger, "replica-1#run-a")
    token = holder.acquire()
    refused: list[str] = []

    def second_contender() -> None:
        try:
            other = writer(ledger, "replica-2#run-b")
            other.acquire()
        except LockBusy as e:
            refused.append(str(e))
            return
        other.release()
        raise AssertionError("a second writer took a lease its holder kept renewing")

    try:
        blocked_cluster_call(3 * TTL_S, second_contender)
        # Back from the call: still the holder, with the same token, and allowed to write.
        holder.fence()
        holder.keepalive()
        assert holder.token == token
        assert ledger.lease_holder(SCOPE) == "replica-1#run-a"
        assert holder.renewals >= 3  # the heartbeat, not the blocked thread, kept it
        assert refused, "the contender never tried"
    finally:
        holder.release()

    # Released: the heartbeat stopped, and the next writer gets the scope with a new token.
    after = writer(ledger, "replica-2#run-c")
    assert after.acquire() == token + 1
    after.release()


@pytest.mark.timeout(120)
def test_recovery_leaves_a_heartbeating_writers_transaction_alone(
    ledger: StorageLedger,
) -> None:
    holder = writer(ledger, "stratus/host-a/41#run-a")
    token = holder.acquire()
    now = datetime.now(UTC)
    tx = ledger.open_transaction(
        scope=SCOPE,
        incident_id=None,
        plan_id=None,
        fencing_token=token,
        mu0=3.0,
        mu_before=3.0,
        started_at=now,
        deadline_at=now + timedelta(minutes=10),
        holder="stratus/host-a/41",
    )
    rescuer = TransactionEngine(
        reader=None,  # type: ignore[arg-type]  # a busy scope is never read
        writer=None,  # type: ignore[arg-type]
        meter=None,  # type: ignore[arg-type]
        ledger=ledger,
        clock=SystemClock(),
        holder="stratus/host-a/41/recovery",
    )
    attempts: list[str] = []

    def recovery_pass() -> None:
        for result in recover(rescuer, Undoer(rescuer)):
            assert result.outcome is None, f"recovery took over a live writer: {result}"
            attempts.append(result.message)

    try:
        blocked_cluster_call(3 * TTL_S, recovery_pass)
        assert attempts and set(attempts) == {"scope busy; left for later"}
        assert ledger.transaction(tx.id).status.value == "open"
        holder.fence()
    finally:
        holder.release()


@pytest.mark.timeout(120)
def test_a_taken_over_lease_is_noticed_and_the_old_token_is_fenced(
    store: Store, ledger: StorageLedger
) -> None:
    holder = writer(ledger, "replica-1#run-a")
    token = holder.acquire()
    try:
        # Someone else takes the scope over (as if our lease had lapsed during a partition):
        # the database hands out the next token, and our heartbeat's next renewal is refused.
        later = datetime.now(UTC) + timedelta(seconds=10 * TTL_S)
        taken = store.locks.acquire(SCOPE.key, "replica-2#run-b", 10 * TTL_S, now=later)
        assert taken is not None and taken.token == token + 1

        wait_for(lambda: holder.lost is not None, what="the heartbeat to notice the takeover")
        with pytest.raises(LockLost):
            holder.keepalive()
        with pytest.raises(LockLost):
            holder.fence()
    finally:
        holder.release()  # must not give back a lease that is someone else's
    current = store.locks.last(SCOPE.key)
    assert current is not None and (current.holder, current.token) == (
        "replica-2#run-b",
        token + 1,
    )


@pytest.mark.timeout(120)
def test_a_write_needs_a_third_of_the_lease_left(ledger: StorageLedger) -> None:
    holder = writer(ledger, "replica-1#run-a")
    token = holder.acquire()
    try:
        holder.fence()
        # Past two thirds of the lease without a renewal (the heartbeat cannot reach the
        # database, say): a write started now might outlive the lease, so it is refused.
        with pytest.raises(LockLost):
            ledger.assert_lock(SCOPE, token, min_remaining_s=TTL_S + 1)
    finally:
        holder.release()


@pytest.mark.timeout(120)
def test_a_wedged_writer_does_not_keep_the_scope_for_ever(ledger: StorageLedger) -> None:
    wedged = WriterLock(
        ledger,
        SystemClock(),
        scope=SCOPE,
        holder="replica-1#wedged",
        ttl_s=TTL_S,
        wait_s=0,
        max_hold_s=1.0,
    )
    token = wedged.acquire()
    try:
        wait_for(lambda: wedged.lost is not None, what="the heartbeat to give up")
        with pytest.raises(LockLost):
            wedged.keepalive()  # it stops at its next wait loop, even with nothing to write
        # Past its bound the heartbeat stops; once the lease runs out another writer gets it.
        successor = writer(ledger, "replica-2#next", wait_s=60)
        assert successor.acquire() == token + 1
        try:
            with pytest.raises(LockLost):
                wedged.fence()  # whatever the wedged writer tries afterwards is refused
        finally:
            successor.release()
    finally:
        wedged.release()
