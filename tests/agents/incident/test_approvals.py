"""Approvals on the lab: bound to the plan's contents, expiring, authorised by the policy,
idempotent — fifty concurrent approvals start exactly one transaction."""

from __future__ import annotations

import threading
from datetime import timedelta

from agents.incident.approvals import Person, Verdict
from agents.incident.headless import never_approve
from agents.model import IncidentState, PlanStatus
from agents.policy import build_policy
from lab.faults import fault
from tests.agents.incident.conftest import HOTEL, Loop, MakeLoop

POLICY = build_policy(
    {
        "defaults": {
            "autonomy": "propose",
            "approvers": {"low": ["@sre"], "medium": ["@sre"], "high": ["@sre"]},
            "two_person_rule": "high",
            "approval_ttl": "15m",
        }
    }
)
SRE = ("sre",)


def waiting(make_loop: MakeLoop) -> tuple[Loop, str]:
    lab = make_loop(HOTEL, approver=never_approve, policy=POLICY)
    fault("wrong-target-port").inject(lab.world, app=HOTEL)
    assert lab.loop.run(
        until=lambda: any(i.state is IncidentState.AWAITING_APPROVAL for i in lab.incidents()),
        timeout_s=600,
        step_s=5,
    )
    [incident] = lab.incidents()
    plan = lab.brain.machine.current_plan(incident.id)
    assert plan is not None and plan.status is PlanStatus.PROPOSED
    return lab, plan.id


def test_fifty_concurrent_approvals_start_exactly_one_transaction(make_loop: MakeLoop) -> None:
    lab, plan_id = waiting(make_loop)
    plan = lab.brain.machine.plan(plan_id)
    decisions = []
    barrier = threading.Barrier(50)

    def click(i: int) -> None:
        person = Person(user_id=f"U{i:07d}", groups=SRE)
        barrier.wait()
        decision = lab.loop.approvals.approve(plan_id, person, content_hash=plan.content_hash)
        decisions.append(decision.verdict)
        if decision.starts_transaction:
            lab.brain.machine.drive(plan.incident_id)
        else:
            lab.brain.machine.drive(plan.incident_id)  # every worker tries; one runs

    threads = [threading.Thread(target=click, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert decisions.count(Verdict.APPROVED) == 1, decisions
    assert set(decisions) <= {Verdict.APPROVED, Verdict.ALREADY, Verdict.REFUSED}
    assert len(lab.brain.machine.transactions(plan.incident_id)) == 1
    assert lab.brain.machine.plan(plan_id).status is PlanStatus.EXECUTED


def test_refusals_leave_the_plan_waiting_and_are_audited(make_loop: MakeLoop) -> None:
    lab, plan_id = waiting(make_loop)
    approvals = lab.loop.approvals
    plan = lab.brain.machine.plan(plan_id)
    stranger = approvals.approve(
        plan_id, Person(user_id="U0CAROL00"), content_hash=plan.content_hash
    )
    assert stranger.verdict is Verdict.REFUSED and "not an approver" in stranger.message
    stale = approvals.approve(
        plan_id, Person(user_id="U0ALICE00", groups=SRE), content_hash="0" * 64
    )
    assert stale.verdict is Verdict.REFUSED and "changed" in stale.message
    refusals = [r for r in lab.store.audit.query(verb="refuse")]
    assert {r.actor for r in refusals} == {"U0CAROL00", "U0ALICE00"}
    assert lab.brain.machine.plan(plan_id).status is PlanStatus.PROPOSED
    assert lab.brain.machine.transactions(plan.incident_id) == []
    lab.world.advance(16 * 60)  # past the approval's time to live
    expired = approvals.approve(
        plan_id, Person(user_id="U0ALICE00", groups=SRE), content_hash=plan.content_hash
    )
    assert expired.verdict is Verdict.REFUSED and "expired" in expired.message
    assert lab.brain.machine.transactions(plan.incident_id) == []


def test_a_rejection_of_contents_nobody_saw_is_refused_and_audited(make_loop: MakeLoop) -> None:
    lab, plan_id = waiting(make_loop)
    alice = Person(user_id="U0ALICE00", groups=SRE)
    stale = lab.loop.approvals.reject(plan_id, alice, "looks wrong", content_hash="0" * 64)
    assert stale.verdict is Verdict.REFUSED and "changed" in stale.message
    assert [r.actor for r in lab.store.audit.query(verb="refuse")] == ["U0ALICE00"]
    assert lab.brain.machine.plan(plan_id).status is PlanStatus.PROPOSED
    current = lab.brain.machine.plan(plan_id).content_hash
    seen = lab.loop.approvals.reject(plan_id, alice, "looks wrong", content_hash=current)
    assert seen.verdict is Verdict.REJECTED
    # Approvals only record the decision; the machine takes it on its next drive.
    incident_id = lab.brain.machine.plan(plan_id).incident_id
    assert lab.brain.machine.incident(incident_id).state is IncidentState.AWAITING_APPROVAL
    assert lab.brain.machine.decided(incident_id)
    lab.brain.machine.drive(incident_id)
    timeline = [e.message for e in lab.store.incidents.timeline(incident_id)]
    assert "Rejected by U0ALICE00: looks wrong" in timeline
    assert not lab.brain.machine.decided(incident_id)


def test_a_rejection_records_the_reason_and_the_planner_moves_on(make_loop: MakeLoop) -> None:
    lab, plan_id = waiting(make_loop)
    plan = lab.brain.machine.plan(plan_id)
    decision = lab.loop.approvals.reject(
        plan_id, Person(user_id="U0ALICE00", groups=SRE), "we are mid-migration"
    )
    assert decision.verdict is Verdict.REJECTED
    rejected = lab.brain.machine.plan(plan_id)
    assert (
        rejected.status is PlanStatus.REJECTED and rejected.reject_reason == "we are mid-migration"
    )
    state = lab.brain.machine.drive(plan.incident_id)
    # The rejected plan is never proposed again: another plan waits, or — when no other fix
    # is known — the incident goes to a person with the runbook.
    proposed = [
        p for p in lab.brain.machine.plans(plan.incident_id) if p.status is PlanStatus.PROPOSED
    ]
    assert all(p.content_hash != plan.content_hash for p in proposed)
    # An escalation stays open (in a person's hands) while the alerts that opened it fire.
    assert state is IncidentState.AWAITING_APPROVAL or state is IncidentState.ESCALATED
    timeline = [e.message for e in lab.store.incidents.timeline(plan.incident_id)]
    if state is IncidentState.ESCALATED:
        assert any(m.startswith("Escalated") for m in timeline)
    assert any("we are mid-migration" in m for m in timeline)


def test_two_person_rule_for_high_risk(make_loop: MakeLoop) -> None:
    policy = build_policy({"defaults": {"autonomy": "propose", "two_person_rule": "low"}})
    lab = make_loop(HOTEL, approver=never_approve, policy=policy)
    fault("wrong-target-port").inject(lab.world, app=HOTEL)
    assert lab.loop.run(
        until=lambda: any(i.state is IncidentState.AWAITING_APPROVAL for i in lab.incidents()),
        timeout_s=600,
    )
    [incident] = lab.incidents()
    plan = lab.brain.machine.current_plan(incident.id)
    assert plan is not None
    first = lab.loop.approvals.approve(
        plan.id, Person(user_id="U0ALICE00"), content_hash=plan.content_hash
    )
    assert first.verdict is Verdict.RECORDED and (first.approvals, first.needed) == (1, 2)
    again = lab.loop.approvals.approve(
        plan.id, Person(user_id="U0ALICE00"), content_hash=plan.content_hash
    )
    assert again.verdict is Verdict.RECORDED and again.approvals == 1  # the same person twice
    second = lab.loop.approvals.approve(
        plan.id, Person(user_id="U0BOB0000"), content_hash=plan.content_hash
    )
    assert second.verdict is Verdict.APPROVED
    assert lab.brain.machine.drive(incident.id) is IncidentState.CLOSED
    assert timedelta(0) <= (lab.world.clock.now() - incident.opened_at)


def test_an_incident_in_executing_runs_only_an_approved_plan_it_named(make_loop: MakeLoop) -> None:
    # EXECUTING without an approval (a hand-edited database, a replica on other code): the
    # machine must not take the newest PROPOSED plan as the one to run. Nothing is written;
    # the incident plans again and the plan still waits for a person.
    lab, plan_id = waiting(make_loop)
    machine = lab.brain.machine
    incident = machine.incident(machine.plan(plan_id).incident_id)
    moved = machine.move(incident, IncidentState.EXECUTING, "forced", data={"plan": plan_id})
    assert moved is not None
    machine.drive(incident.id)
    assert machine.transactions(incident.id) == []
    assert lab.store.audit.query(verb="write") == []
    assert machine.plan(plan_id).status is PlanStatus.PROPOSED
    messages = [m for _, m in lab.timeline(incident.id)]
    assert "No approved plan found; planning again" in messages
