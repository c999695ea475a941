"""Recovery: bring every transaction a crash interrupted to a consistent end (rule 3).

Run at start, and periodically by the bot so that a transaction whose writer died on another
replica is finished once its lease expires. A scope whose lease another live writer holds is
left alone: recovery takes a scope only through the lease itself, which storage grants only
once the previous holder has not renewed it for a full lease duration — and a live writer's
heartbeat renews it every third of that, however long its cluster calls block. A writer that
comes back after all is refused by fencing at its next write.

The timeline says why recovery took over, from the lease as storage last saw it: the writer's
lease expired (and who last renewed it, when), or the bot restarted (the holder was an earlier
process on this host), or the writer gave the lease back without finishing.

    open        → roll back what was written (its validation never ran)
    validating  → commit when a passing validation was recorded, else roll back
    aborting    → finish the rollback
    undoing     → finish the undo
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from agents.errors import ClusterError, LockLost
from agents.model import Outcome, OutcomeKind, TransactionId, TransactionStatus
from agents.tnr.engine import TransactionEngine
from agents.tnr.lock import LockBusy
from agents.tnr.records import LeaseRecord
from agents.tnr.undo import Undoer

logger = logging.getLogger(__name__)

ACTOR = "recovery"


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovered:
    transaction_id: TransactionId
    was: TransactionStatus
    outcome: OutcomeKind | None  # None when the scope was busy (left for later)
    message: str
    #: The scope's writer lease is held (a dead writer's has not run out yet): try again.
    busy: bool = False


def recover(
    engine: TransactionEngine,
    undoer: Undoer,
    *,
    only: TransactionId | None = None,
    wait_s: float = 0.0,
    cluster: str | None = None,
) -> list[Recovered]:
    """Finish interrupted transactions whose scope no live writer holds. `wait_s`: how long
    to wait for a dead writer's lease to expire (at start-up, its lease outlives it).
    `cluster`: only that cluster's (the store may be shared by the bots of several clusters,
    and each can reach only its own)."""
    results: list[Recovered] = []
    for tx in engine.ledger.interrupted():
        if only is not None and tx.id != only:
            continue
        if cluster is not None and tx.scope.cluster != cluster:
            continue
        lock = engine.lock(tx.scope, wait_s=wait_s)
        last = engine.ledger.last_lease(tx.scope)
        try:
            lock.acquire()
        except LockBusy:
            results.append(
                Recovered(
                    transaction_id=tx.id,
                    was=tx.status,
                    outcome=None,
                    message="scope busy; left for later",
                    busy=True,
                )
            )
            continue
        try:
            fresh = engine.ledger.transaction(tx.id)  # it may have moved on while we waited
            if fresh.status not in _UNFINISHED:
                continue  # its writer finished it while we waited for the lease
            why = takeover_reason(
                engine.ledger.last_lease(tx.scope) if last is None else last,
                me=lock.holder,
                ttl_s=lock.ttl_s,
            )
            logger.warning("recovery takes over transaction %s: %s", tx.id, why)
            outcome: Outcome | None = None
            if (
                fresh.status is TransactionStatus.VALIDATING
                and fresh.validation.get("passed") is True
            ):
                outcome = engine.commit_recorded(fresh, actor=ACTOR, why=why)
            elif fresh.status in (
                TransactionStatus.OPEN,
                TransactionStatus.VALIDATING,
                TransactionStatus.ABORTING,
            ):
                outcome = engine.resume_abort(fresh, lock, actor=ACTOR, why=why)
            elif fresh.status is TransactionStatus.UNDOING:
                result = undoer.resume(fresh, lock, actor=ACTOR)
                results.append(
                    Recovered(
                        transaction_id=tx.id,
                        was=tx.status,
                        outcome=None,
                        message=f"undo finished: {result.message}",
                    )
                )
                continue
            if outcome is not None:
                logger.info("recovered transaction %s (%s) → %s", tx.id, tx.status, outcome.kind)
                results.append(
                    Recovered(
                        transaction_id=tx.id,
                        was=tx.status,
                        outcome=outcome.kind,
                        message=outcome.reason,
                    )
                )
        except (ClusterError, LockLost) as e:
            logger.exception("recovery of transaction %s failed", tx.id)
            results.append(
                Recovered(
                    transaction_id=tx.id,
                    was=tx.status,
                    outcome=None,
                    message=f"recovery failed: {e}",
                )
            )
        finally:
            lock.release()
    return results


_UNFINISHED = (
    TransactionStatus.OPEN,
    TransactionStatus.VALIDATING,
    TransactionStatus.ABORTING,
    TransactionStatus.UNDOING,
)


def process_of(holder: str) -> str:
    """The process part of a lock holder name: `stratus/host/pid#run` → `stratus/host/pid`
    (recovery's own engine adds `/recovery`)."""
    process = holder.split("#", 1)[0]
    return process.removesuffix("/recovery")


def takeover_reason(last: LeaseRecord | None, *, me: str, ttl_s: float) -> str:
    """Why the writer of an unfinished transaction is no longer on it, in the timeline's words."""
    if last is None:
        return "its writer held no lease on the scope"
    when = last.renewed_at.isoformat(timespec="seconds")
    if last.expires_at - last.renewed_at < timedelta(seconds=ttl_s * 0.9):
        ended = last.expires_at.isoformat(timespec="seconds")
        return (
            f"its writer {last.holder} gave the writer lock back at {ended} without finishing "
            "the transaction"
        )
    writer, mine = process_of(last.holder), process_of(me)
    expired = f"the writer's lease expired (holder {last.holder} last renewed at {when})"
    if writer == mine:
        return f"{expired} while this process kept running"
    writer_host, _, writer_pid = writer.rpartition("/")
    my_host, _, my_pid = mine.rpartition("/")
    if writer_host and writer_host == my_host and writer_pid != my_pid:
        return (
            f"the bot restarted: the writer {last.holder}, an earlier process on this host, "
            f"last renewed its lease at {when}"
        )
    return expired
