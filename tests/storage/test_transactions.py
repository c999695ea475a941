"""TransactionRepository and UndoRepository: status and figures, interrupted transactions, the
write-ahead stack and its LIFO order within and across transactions."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from storage import Conflict, NotFound, Store
from tests.storage import rows
from tests.storage.conftest import at


@dataclass(frozen=True)
class Ref:
    kind: str
    name: str
    namespace: str | None = "hotel"


@pytest.fixture
def with_incident(store: Store) -> Store:
    store.incidents.create(rows.incident())
    store.plans.create(rows.plan())
    return store


def test_create_get_and_status_compare_and_set(with_incident: Store) -> None:
    store = with_incident
    store.transactions.create(rows.transaction(plan_id="plan-1", mu0=3.0, mu_before=3.0))
    got = store.transactions.get("txn-1")
    assert (got.status, got.plan_id, got.fencing_token, got.started_at) == (
        "open",
        "plan-1",
        1,
        at(0),
    )
    assert store.transactions.set_status("txn-1", "validating", expected="open")
    assert not store.transactions.set_status("txn-1", "aborting", expected="open")
    assert store.transactions.set_status(
        "txn-1",
        "committed",
        expected="validating",
        ended_at=at(90),
        mu_after=0.0,
        validation={"settled": True, "sustain_s": 60},
        reason="healthy",
    )
    got = store.transactions.get("txn-1")
    assert (got.status, got.ended_at, got.mu_after, got.reason) == (
        "committed",
        at(90),
        0.0,
        "healthy",
    )
    assert got.validation == {"settled": True, "sustain_s": 60}
    with pytest.raises(NotFound):
        store.transactions.get("nope")
    with pytest.raises(NotFound):
        store.transactions.set_status("nope", "aborted")


def test_set_figures(with_incident: Store) -> None:
    store = with_incident
    store.transactions.create(rows.transaction())
    got = store.transactions.set_figures(
        "txn-1", mu0=3.0, mu_before=2.0, deadline_at=at(600), fencing_token=7
    )
    assert (got.mu0, got.mu_before, got.deadline_at, got.fencing_token, got.mu_after) == (
        3.0,
        2.0,
        at(600),
        7,
        None,
    )
    assert store.transactions.set_figures("txn-1").mu_before == 2.0
    with pytest.raises(NotFound):
        store.transactions.set_figures("nope", mu_after=1.0)


def test_manual_undo_transaction_has_no_incident(store: Store) -> None:
    store.transactions.create(rows.transaction("undo-1", incident_id=None))
    assert store.transactions.get("undo-1").incident_id is None


def test_interrupted_and_committed_for_scope(with_incident: Store) -> None:
    store = with_incident
    statuses = ["open", "validating", "aborting", "committed", "aborted", "committed", "undone"]
    for n, status in enumerate(statuses):
        store.transactions.create(rows.transaction(f"t{n}", status=status, started_at=at(n)))
    store.transactions.create(rows.transaction("other-ns", status="committed", namespace="shop"))

    assert [t.id for t in store.transactions.list_interrupted()] == ["t0", "t1", "t2"]
    assert [t.id for t in store.transactions.list_committed_for_scope("lab", "hotel")] == [
        "t5",
        "t3",
    ]
    assert len(store.transactions.list_for_incident("inc-1")) == len(statuses) + 1


def test_push_assigns_stack_positions_and_stack_is_lifo(with_incident: Store) -> None:
    store = with_incident
    store.transactions.create(rows.transaction())
    pushed = [
        store.undo.push(rows.undo_entry("u-a", name="frontend")),
        store.undo.push(rows.undo_entry("u-b", kind="ConfigMap", name="frontend-config")),
        store.undo.push(rows.undo_entry("u-c", kind="Node", name="node-1", namespace=None)),
    ]
    assert [e.seq for e in pushed] == [1, 2, 3]
    assert all(e.state == "pending" for e in pushed)
    assert [e.id for e in store.undo.stack("txn-1")] == ["u-c", "u-b", "u-a"]
    got = store.undo.get("u-b")
    assert got.snapshot is not None and got.snapshot["kind"] == "ConfigMap"
    with pytest.raises(NotFound):
        store.undo.get("nope")


def test_push_for_an_unknown_transaction_is_a_conflict(store: Store) -> None:
    with pytest.raises(Conflict):
        store.undo.push(rows.undo_entry("u-x", transaction_id="nope"))


def test_entry_state_machine(with_incident: Store) -> None:
    store = with_incident
    store.transactions.create(rows.transaction())
    store.undo.push(rows.undo_entry("u-1"))
    store.undo.push(rows.undo_entry("u-2", name="geo"))
    store.undo.push(rows.undo_entry("u-3", name="rate"))

    assert store.undo.mark_applied("u-1", produced_resource_version="101", at=at(1))
    assert not store.undo.mark_applied("u-1", produced_resource_version="102", at=at(2))
    assert store.undo.mark_skipped("u-2", at=at(3))
    assert not store.undo.mark_skipped("u-1", at=at(3))  # it was applied: restore, not skip
    assert store.undo.mark_restored("u-1", at=at(4), overwritten={"spec.replicas": 5})
    assert store.undo.mark_restored("u-3", at=at(5))  # pending: written but not recorded
    assert not store.undo.mark_restored("u-2", at=at(6))

    u1, u2, u3 = (store.undo.get(i) for i in ("u-1", "u-2", "u-3"))
    assert (u1.state, u1.produced_resource_version, u1.applied_at, u1.restored_at) == (
        "restored",
        "101",
        at(1),
        at(4),
    )
    assert u1.overwritten == {"spec.replicas": 5}
    assert (u2.state, u3.state, u3.overwritten) == ("skipped", "restored", None)
    with pytest.raises(NotFound):
        store.undo.mark_applied("nope", produced_resource_version=None, at=at(1))


def _committed(store: Store, txn: str, start: float, *targets: Ref, cluster: str = "lab") -> None:
    store.transactions.create(rows.transaction(txn, started_at=at(start), cluster=cluster))
    for n, ref in enumerate(targets):
        entry = store.undo.push(
            rows.undo_entry(
                f"{txn}-{n}", txn, kind=ref.kind, name=ref.name, namespace=ref.namespace
            )
        )
        store.undo.mark_applied(entry.id, produced_resource_version=f"{txn}-{n}", at=at(start + n))
    store.transactions.set_status(txn, "committed", ended_at=at(start + 50))


def test_committed_stack_across_transactions_latest_write_first(with_incident: Store) -> None:
    store = with_incident
    web, cm, node = Ref("Deployment", "frontend"), Ref("ConfigMap", "cfg"), Ref("Node", "n1", None)
    _committed(store, "t1", 0, web, cm)
    _committed(store, "t2", 100, cm, node)
    _committed(store, "t3", 200, Ref("Deployment", "unrelated"))
    # An aborted transaction's entries are not part of the committed stack.
    store.transactions.create(rows.transaction("t4", started_at=at(300), status="aborted"))
    store.undo.push(rows.undo_entry("t4-0", "t4", kind="ConfigMap", name="cfg"))
    store.undo.mark_applied("t4-0", produced_resource_version="x", at=at(300))

    stack = store.undo.committed_stack([web, cm, node, web])
    assert [e.id for e in stack] == ["t2-1", "t2-0", "t1-1", "t1-0"]
    assert [e.id for e in store.undo.committed_stack([node])] == ["t2-1"]
    assert store.undo.committed_stack([Ref("Node", "n1", "hotel")]) == []  # namespace matters
    assert store.undo.committed_stack([]) == []


def test_later_transactions_must_be_undone_first(with_incident: Store) -> None:
    store = with_incident
    web, cm = Ref("Deployment", "frontend"), Ref("ConfigMap", "cfg")
    _committed(store, "t1", 0, web)
    _committed(store, "t2", 100, web, cm)
    _committed(store, "t3", 200, cm)
    _committed(store, "t4", 300, Ref("Deployment", "unrelated"))
    # The same names in another cluster sharing the store are other objects.
    _committed(store, "t5", 400, web, cm, cluster="west")

    assert store.undo.later_transactions("t1") == ["t2"]
    assert store.undo.later_transactions("t2") == ["t3"]
    assert store.undo.later_transactions("t3") == []
    # Once t2 is undone it no longer blocks t1.
    store.transactions.set_status("t2", "undone", expected="committed")
    assert store.undo.later_transactions("t1") == []
    with pytest.raises(NotFound):
        store.undo.later_transactions("nope")
