"""PlanRepository and ApprovalRepository: ranked plans, compare-and-set status, approvals that
are idempotent per user, bound to contents and expiring."""

from __future__ import annotations

import threading

import pytest

from storage import Conflict, NotFound, Store
from storage.records import StoredApproval, StoredDiagnosis
from tests.storage import rows
from tests.storage.conftest import at


@pytest.fixture
def with_incident(store: Store) -> Store:
    store.incidents.create(rows.incident())
    return store


def approval(
    user: str,
    *,
    plan_id: str = "plan-1",
    content_hash: str = "h1",
    t: float = 0,
    ttl: float = 600,
    id: str | None = None,
) -> StoredApproval:
    return StoredApproval(
        id=id or f"apr-{user}-{t}",
        plan_id=plan_id,
        content_hash=content_hash,
        user_id=user,
        created_at=at(t),
        expires_at=at(t + ttl),
    )


def test_create_many_and_list_in_attempt_rank_order(with_incident: Store) -> None:
    store = with_incident
    store.plans.create_many(
        [rows.plan("p-1b", rank=1), rows.plan("p-1a", rank=0), rows.plan("p-2", attempt=1)]
    )
    assert [p.id for p in store.plans.list_for_incident("inc-1")] == ["p-1a", "p-1b", "p-2"]
    assert [p.id for p in store.plans.list_for_incident("inc-1", attempt=1)] == ["p-2"]
    got = store.plans.get("p-1a")
    assert got.actions[0]["replicas"] == 3 and got.status == "proposed"


def test_create_many_is_all_or_nothing(with_incident: Store) -> None:
    store = with_incident
    store.plans.create(rows.plan("taken"))
    with pytest.raises(Conflict):
        store.plans.create_many([rows.plan("fresh"), rows.plan("taken")])
    with pytest.raises(NotFound):
        store.plans.get("fresh")


def test_plan_of_an_unknown_incident_is_a_conflict(store: Store) -> None:
    with pytest.raises(Conflict):
        store.plans.create(rows.plan(incident_id="nope"))


def test_set_status_compare_and_set(with_incident: Store) -> None:
    store = with_incident
    store.plans.create(rows.plan())
    assert store.plans.set_status(
        "plan-1",
        "rejected",
        expected="proposed",
        decided_at=at(9),
        decided_by="U1",
        reject_reason="too risky",
    )
    assert not store.plans.set_status("plan-1", "approved", expected="proposed")
    got = store.plans.get("plan-1")
    assert (got.status, got.decided_by, got.decided_at, got.reject_reason) == (
        "rejected",
        "U1",
        at(9),
        "too risky",
    )
    assert [p.id for p in store.plans.list_by_status("rejected")] == ["plan-1"]
    with pytest.raises(NotFound):
        store.plans.set_status("nope", "approved")


def test_concurrent_approvals_approve_exactly_once(with_incident: Store) -> None:
    store = with_incident
    store.plans.create(rows.plan())
    winners: list[str] = []
    barrier = threading.Barrier(8)

    def click(user: str) -> None:
        barrier.wait()
        if store.plans.set_status("plan-1", "approved", expected="proposed", decided_by=user):
            winners.append(user)

    threads = [threading.Thread(target=click, args=(f"U{n}",)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1
    assert store.plans.get("plan-1").decided_by == winners[0]


def test_approvals_are_idempotent_per_user(with_incident: Store) -> None:
    store = with_incident
    store.plans.create(rows.plan())
    first = store.approvals.add(approval("U1", t=0))
    again = store.approvals.add(approval("U1", t=5))
    assert again.id == first.id and again.created_at == at(0)
    assert store.approvals.count_valid("plan-1", "h1", at(10)) == 1

    store.approvals.add(approval("U2", t=20))
    assert store.approvals.count_valid("plan-1", "h1", at(30)) == 2
    assert [a.user_id for a in store.approvals.list_valid("plan-1", "h1", at(30))] == ["U1", "U2"]


def test_approvals_count_only_for_the_same_contents_and_until_expiry(with_incident: Store) -> None:
    store = with_incident
    store.plans.create(rows.plan())
    store.approvals.add(approval("U1", t=0, ttl=100))
    store.approvals.add(approval("U2", t=0, ttl=1000))
    assert store.approvals.count_valid("plan-1", "h1", at(50)) == 2
    assert store.approvals.count_valid("plan-1", "h1", at(100)) == 1  # U1 expired at 100
    assert store.approvals.count_valid("plan-1", "h2", at(50)) == 0  # other contents
    assert store.approvals.count_valid("plan-1", "h1", at(-1)) == 0  # not given yet


def test_an_expired_or_changed_approval_is_refreshed(with_incident: Store) -> None:
    store = with_incident
    store.plans.create(rows.plan())
    store.approvals.add(approval("U1", t=0, ttl=100))
    refreshed = store.approvals.add(approval("U1", t=200, ttl=100))
    assert (refreshed.created_at, refreshed.expires_at) == (at(200), at(300))
    rehashed = store.approvals.add(approval("U1", t=210, content_hash="h2"))
    assert rehashed.content_hash == "h2"
    assert store.approvals.count_valid("plan-1", "h1", at(220)) == 0
    assert store.approvals.count_valid("plan-1", "h2", at(220)) == 1
    assert len(store.approvals.list_for_plan("plan-1")) == 1


def test_approval_of_an_unknown_plan_is_a_conflict(store: Store) -> None:
    with pytest.raises(Conflict):
        store.approvals.add(approval("U1", plan_id="nope"))


def test_diagnoses(with_incident: Store) -> None:
    store = with_incident
    for n, service in enumerate(["frontend", "geo"]):
        store.diagnoses.add(
            StoredDiagnosis(
                incident_id="inc-1",
                created_at=at(n),
                reasoner="offline",
                root_cause_service=service,
                category="application/misconfiguration",
                confidence=0.5 + n / 10,
                summary=f"guess {n}",
                body={"hypotheses": [{"service": service}]},
            )
        )
    listed = store.diagnoses.list_for_incident("inc-1")
    assert [d.root_cause_service for d in listed] == ["frontend", "geo"]
    latest = store.diagnoses.latest("inc-1")
    assert latest is not None and latest.body == {"hypotheses": [{"service": "geo"}]}
    assert listed[0].id is not None
    assert store.diagnoses.get(listed[0].id).summary == "guess 0"
    assert store.diagnoses.latest("nope") is None
    with pytest.raises(NotFound):
        store.diagnoses.get(10_000)
