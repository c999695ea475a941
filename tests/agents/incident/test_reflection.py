"""When the first-ranked plan does not restore health, the transaction is rolled back by itself
and the loop tries the next plan, never the same one twice; the timeline says why.

The lab's planner is rarely wrong on the public scenarios, so this test makes the first plan
wrong on purpose: a planner wrapper puts a plausible but useless action first (restart the
pods of the service the alerts point at) ahead of the real planner's proposal. What is under
test is the state machine and the engine: validation, the automatic undo, reflection and the
next attempt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from agents.actions import RolloutRestart
from agents.model import Diagnosis, Incident, ObjectRef, TransactionStatus
from agents.planning.plan import Attempt, CandidatePlan, Planner, Proposal
from lab.faults import check_mitigation, fault
from tests.agents.incident.conftest import HOTEL, MakeLoop


class RestartFirst:
    """The real planner's proposal, with "restart the frontend" ranked first while untried."""

    def __init__(self, planner: Planner) -> None:
        self._planner = planner

    def plan(
        self,
        incident: Incident,
        diagnosis: Diagnosis,
        attempts: Sequence[Attempt],
        *,
        now: datetime,
    ) -> Proposal:
        proposal = self._planner.plan(incident, diagnosis, attempts, now=now)
        target = ObjectRef(
            api_version="apps/v1",
            kind="Deployment",
            name="frontend",
            namespace=incident.scope.namespace,
        )
        tried = any(
            isinstance(a, RolloutRestart) for attempt in attempts for a in attempt.plan.actions
        )
        if tried:
            return proposal
        wrong = CandidatePlan(
            actions=(RolloutRestart(target=target, stamp=now.isoformat()),),
            rationale="frontend shows the errors: restart it",
            hypothesis="frontend: application/code_defect",
        )
        return replace(proposal, candidates=(wrong, *proposal.candidates), escalation=None)


def test_a_plan_that_does_not_help_is_undone_and_the_next_one_resolves(make_loop: MakeLoop) -> None:
    lab = make_loop(HOTEL)
    machine = lab.brain.machine
    machine._planner = RestartFirst(machine._planner)
    injection = fault("wrong-target-port").inject(lab.world, app=HOTEL)
    incident = lab.run_until_ended()

    transactions = machine.transactions(incident.id)
    assert [t.status for t in transactions] == [
        TransactionStatus.ABORTED,
        TransactionStatus.COMMITTED,
    ]
    first, second = transactions
    assert "μ rose" in (first.reason or "") or "no improvement" in (first.reason or "")
    assert second.mu_after == 0.0
    plans = [p for p in machine.plans(incident.id) if p.id in {first.plan_id, second.plan_id}]
    assert len({p.content_hash for p in plans}) == 2  # never the same plan twice
    second_plan = machine.plan(second.plan_id or "")
    assert (
        "attempt 1" in second_plan.reflection.lower()
        or "rolled back" in second_plan.reflection.lower()
    )

    timeline = lab.timeline(incident.id)
    states = [s for s, _ in timeline]
    assert states.count("executing") == 2 and "aborting" in states and "resolved" in states
    # Every phase of each transaction is a state of its own, in order, taken by the machine.
    first_run = states[states.index("executing") :]
    assert first_run[:4] == ["executing", "validating", "aborting", "planning"], states
    second_run = first_run[1:][first_run[1:].index("executing") :]
    assert second_run[:3] == ["executing", "validating", "committed"], states
    messages = "\n".join(m for _, m in timeline)
    assert (
        "Rolled back" in messages
        and "Restart the pods of Deployment/hotel-reservation/frontend" in messages
    )
    assert check_mitigation(lab.world, injection).mitigated
