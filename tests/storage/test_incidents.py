"""IncidentRepository: creation with children, queries, guarded transitions, alerts, close."""

from __future__ import annotations

import threading

import pytest

from storage import Conflict, Database, NotFound, Store
from tests.storage import rows
from tests.storage.conftest import at


def test_create_with_alerts_and_events_then_read_back(store: Store) -> None:
    created = store.incidents.create(rows.incident(), alerts=[rows.alert()], events=[rows.event()])
    assert created.id == "inc-1"

    got = store.incidents.get("inc-1")
    assert (got.state, got.mu0, got.opened_at, got.attempt) == ("detected", 3.0, at(0), 0)
    assert [a.fingerprint for a in store.incidents.alerts("inc-1")] == ["fp-1"]
    assert [e.message for e in store.incidents.timeline("inc-1")] == ["detected"]


def test_create_twice_is_a_conflict_and_changes_nothing(store: Store) -> None:
    row = rows.incident()
    store.incidents.create(row)
    with pytest.raises(Conflict):
        store.incidents.create(row, events=[rows.event(message="second")])
    assert store.incidents.timeline("inc-1") == []


def test_get_unknown_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.incidents.get("nope")


def test_open_and_by_state_queries(store: Store) -> None:
    store.incidents.create(rows.incident("a", opened_at=at(2)))
    store.incidents.create(rows.incident("b", opened_at=at(1), state="diagnosing"))
    store.incidents.create(rows.incident("c", opened_at=at(0), state="closed", closed_at=at(5)))
    store.incidents.create(rows.incident("d", opened_at=at(3), namespace="shop"))

    assert [i.id for i in store.incidents.list_open()] == ["b", "a", "d"]
    assert [i.id for i in store.incidents.list_open(namespace="hotel")] == ["b", "a"]
    assert [i.id for i in store.incidents.list_open(cluster="other")] == []
    assert [i.id for i in store.incidents.list_by_state("diagnosing", "closed")] == ["c", "b"]


def test_find_open_by_group_key_and_fingerprint(store: Store) -> None:
    store.incidents.create(rows.incident("old", state="closed", group_key="g"))
    store.incidents.create(rows.incident("new", opened_at=at(10), group_key="g"))
    store.incidents.create(rows.incident("other", group_key="h"), alerts=[rows.alert("other")])

    found = store.incidents.find_open_by_group_key("g")
    assert found is not None and found.id == "new"
    assert store.incidents.find_open_by_group_key("missing") is None
    by_fp = store.incidents.find_open_by_fingerprint("fp-1")
    assert by_fp is not None and by_fp.id == "other"
    assert store.incidents.find_open_by_fingerprint("fp-2") is None


def test_transition_writes_state_and_event_together(store: Store) -> None:
    store.incidents.create(rows.incident())
    moved = store.incidents.transition(
        "inc-1",
        "diagnosing",
        at=at(5),
        message="collecting evidence",
        expected="detected",
        data={"handler": "http_errors"},
        mu=2.5,
    )
    assert moved is True
    got = store.incidents.get("inc-1")
    assert (got.state, got.updated_at, got.mu) == ("diagnosing", at(5), 2.5)
    (event,) = store.incidents.timeline("inc-1")
    assert (event.state, event.kind, event.at, event.data) == (
        "diagnosing",
        "transition",
        at(5),
        {"handler": "http_errors"},
    )


def test_transition_guard_refuses_a_state_that_moved_on(store: Store) -> None:
    store.incidents.create(rows.incident(state="diagnosed"))
    assert not store.incidents.transition(
        "inc-1", "diagnosing", at=at(1), message="x", expected=["detected"]
    )
    assert store.incidents.get("inc-1").state == "diagnosed"
    assert store.incidents.timeline("inc-1") == []
    with pytest.raises(NotFound):
        store.incidents.transition("nope", "diagnosing", at=at(1), message="x")


def test_concurrent_transitions_from_one_state_only_one_wins(store: Store) -> None:
    store.incidents.create(rows.incident(state="awaiting_approval"))
    results: list[bool] = []
    barrier = threading.Barrier(6)

    def worker(n: int) -> None:
        barrier.wait()
        results.append(
            store.incidents.transition(
                "inc-1", "executing", at=at(n), message=f"worker {n}", expected="awaiting_approval"
            )
        )

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 5 + [True]
    assert len(store.incidents.timeline("inc-1")) == 1


def test_update_changes_figures_only(store: Store) -> None:
    store.incidents.create(rows.incident())
    got = store.incidents.update("inc-1", at=at(3), mu=1.0, attempt=2)
    assert (got.mu, got.attempt, got.state, got.updated_at, got.title) == (
        1.0,
        2,
        "detected",
        at(3),
        "frontend 5xx",
    )
    with pytest.raises(NotFound):
        store.incidents.update("nope", at=at(3), mu=1.0)


def test_record_alerts_inserts_then_updates(store: Store) -> None:
    store.incidents.create(rows.incident())
    first = store.incidents.record_alerts([rows.alert(), rows.alert(fingerprint="fp-2")])
    assert [(a.fingerprint, a.count) for a in first] == [("fp-1", 1), ("fp-2", 1)]

    (again,) = store.incidents.record_alerts(
        [rows.alert(status="resolved", ends_at=at(60), seen=at(61), labels={"x": "y"})]
    )
    assert (again.status, again.count, again.ends_at) == ("resolved", 2, at(60))
    assert (again.first_seen, again.last_seen, again.labels) == (at(0), at(61), {"x": "y"})
    assert len(store.incidents.alerts("inc-1")) == 2


def test_record_alerts_for_an_unknown_incident_is_a_conflict(store: Store) -> None:
    with pytest.raises(Conflict):
        store.incidents.record_alerts([rows.alert("nope")])


def test_close_fills_the_search_fields_and_list_closed(store: Store) -> None:
    store.incidents.create(rows.incident("a", state="resolved"))
    store.incidents.create(rows.incident("b", state="escalated"))
    assert store.incidents.close(
        "a",
        at=at(100),
        message="closed",
        summary="bad image",
        root_cause_service="geo",
        category="application/misconfiguration",
        resolution="rolled back",
        expected=["resolved", "escalated"],
    )
    assert store.incidents.close("b", at=at(200), message="closed")
    assert not store.incidents.close("b", at=at(300), message="again", expected="resolved")

    closed = store.incidents.list_closed()
    assert [i.id for i in closed] == ["b", "a"]
    a = closed[1]
    assert (a.state, a.closed_at, a.root_cause_service, a.category, a.resolution) == (
        "closed",
        at(100),
        "geo",
        "application/misconfiguration",
        "rolled back",
    )
    assert [i.id for i in store.incidents.list_closed(since=at(150))] == ["b"]
    assert [i.id for i in store.incidents.list_closed(limit=1)] == ["b"]
    assert store.incidents.list_open() == []
    assert store.incidents.timeline("a")[-1].state == "closed"


def test_rows_are_detached_copies(store: Store, db: Database) -> None:
    row = rows.incident()
    stored = store.incidents.create(row)
    assert stored is not row
    stored.title = "changed in memory"
    assert store.incidents.get("inc-1").title == "frontend 5xx"
