"""A plan that writes a value no recorded state had shows it, action by action, and says it
waits for a person at every autonomy level."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from agents.actions import ScaleWorkload
from agents.model import Incident, IncidentId, IncidentState, ObjectRef, PlanId, PlanStatus, Scope
from agents.planning.grounding import NOT_SEEN
from agents.planning.plan import Plan
from bot.render.plan import render_plan

AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
REF = ObjectRef(api_version="apps/v1", kind="Deployment", name="search", namespace="hotel")


def _incident() -> Incident:
    return Incident(
        id=IncidentId("INC-1"),
        title="search errors",
        scope=Scope(cluster="lab", namespace="hotel"),
        state=IncidentState.AWAITING_APPROVAL,
        mu0=2.0,
        opened_at=AT,
        updated_at=AT,
    )


def _plan(**extra: tuple[str, ...]) -> Plan:
    action = ScaleWorkload(target=REF, replicas=2, from_replicas=1)
    return Plan(
        id=PlanId("plan-1"),
        incident_id=IncidentId("INC-1"),
        attempt=1,
        rank=0,
        actions=(action,),
        rationale="It ran 2 replicas according to the diagnosis's change record",
        hypothesis="search: virtualization/operation_error",
        status=PlanStatus.PROPOSED,
        created_at=AT,
        **extra,
    )


def test_a_suggestion_is_marked_not_seen_before_and_waits_for_a_person() -> None:
    action = _plan().actions[0]
    plan = _plan(
        suggestions=(f"{action.describe()}: the value is {NOT_SEEN} (only a reasoner named it)",),
        held=(f"it writes a value {NOT_SEEN}: a person must confirm it",),
    )
    text = json.dumps(render_plan(_incident(), plan, open_for_approval=True).blocks)
    assert NOT_SEEN in text
    assert "Waits for a person at every autonomy level" in text
    assert "suggestion" in text


def test_a_grounded_plan_carries_no_mark() -> None:
    text = json.dumps(render_plan(_incident(), _plan(), open_for_approval=True).blocks)
    assert NOT_SEEN not in text
    assert "Waits for a person" not in text
