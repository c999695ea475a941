"""Bad input and crashes never leave half a write behind.

A process killed (SIGKILL) in the middle of a multi-row repository write leaves either all of
its rows or none; an exception in the middle of a write rolls it back; and the database is
usable afterwards (no stale lock, no torn state)."""

from __future__ import annotations

import multiprocessing
import os
import signal
from datetime import datetime

import pytest

from storage import Conflict, Database, StorageError, Store
from tests.storage import rows
from tests.storage.conftest import at
from tests.storage.crash_worker import run


def kill_mid_write(url: str, scenario: str, pause_after: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    paused = ctx.Event()
    process = ctx.Process(target=run, args=(url, scenario, pause_after, paused))
    process.start()
    try:
        assert paused.wait(timeout=60), "the write never reached its pause point"
        assert process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.join(timeout=30)
    assert process.exitcode == -signal.SIGKILL


def counts(store: Store, incident_id: str) -> tuple[int, int, int]:
    incidents = [i for i in store.incidents.list_open() if i.id == incident_id]
    return (
        len(incidents),
        len(store.incidents.alerts(incident_id)),
        len(store.incidents.timeline(incident_id)),
    )


@pytest.mark.parametrize(
    ("pause_after", "expected"),
    [
        (2, (0, 0, 0)),  # incident and alerts sent, events not: nothing survives
        (0, (1, 5, 2)),  # killed right after COMMIT: everything survives
    ],
    ids=["mid-write", "after-commit"],
)
def test_sigkill_during_create_leaves_all_or_nothing(
    database_url: str, pause_after: int, expected: tuple[int, int, int]
) -> None:
    kill_mid_write(database_url, "create", pause_after)
    db = Database.connect(database_url)
    try:
        store = Store.over(db)
        assert counts(store, "inc-crash") == expected
        if expected[0] == 0:
            # Nothing is locked or half-written: the same write now goes through whole.
            store.incidents.create(
                rows.incident("inc-crash"),
                alerts=[rows.alert("inc-crash", f"fp-{n}") for n in range(5)],
                events=[rows.event("inc-crash")],
            )
            assert counts(store, "inc-crash") == (1, 5, 1)
    finally:
        db.close()


def test_sigkill_between_state_change_and_timeline_event(database_url: str) -> None:
    db = Database.connect(database_url)
    try:
        store = Store.over(db)
        store.incidents.create(rows.incident("inc-crash"))
        kill_mid_write(database_url, "transition", 1)  # after the UPDATE, before the event
        assert store.incidents.get("inc-crash").state == "detected"
        assert store.incidents.timeline("inc-crash") == []
        # The row lock of the dead writer is gone: another worker can move the incident.
        assert store.incidents.transition(
            "inc-crash", "diagnosing", at=at(6), message="x", expected="detected"
        )
    finally:
        db.close()


def test_exception_in_a_later_statement_rolls_back_the_earlier_ones(store: Store) -> None:
    # The incident row is flushed first; the duplicate alert fails afterwards.
    with pytest.raises(Conflict):
        store.incidents.create(
            rows.incident("inc-bad"),
            alerts=[rows.alert("inc-bad", "fp-1"), rows.alert("inc-bad", "fp-1")],
        )
    assert counts(store, "inc-bad") == (0, 0, 0)


def test_failed_timeline_event_undoes_the_state_change(store: Store) -> None:
    store.incidents.create(rows.incident())
    with pytest.raises(StorageError):
        store.incidents.transition(
            "inc-1",
            "diagnosing",
            at=at(1),
            message="x",
            data={"not json": datetime(2026, 1, 1)},  # the event's INSERT fails
        )
    assert store.incidents.get("inc-1").state == "detected"
    assert store.incidents.timeline("inc-1") == []


def test_failed_alert_batch_changes_none_of_the_alerts(store: Store) -> None:
    store.incidents.create(rows.incident(), alerts=[rows.alert()])
    with pytest.raises(Conflict):
        store.incidents.record_alerts(
            [
                rows.alert(status="resolved", seen=at(9)),
                rows.alert(fingerprint="fp-2"),
                rows.alert("unknown-incident", "fp-3"),
            ]
        )
    (only,) = store.incidents.alerts("inc-1")
    assert (only.status, only.count, only.last_seen) == ("firing", 1, at(0))
