"""The held state and a transaction that did not start say in Slack exactly what is unknown,
never "healthy"; a held transaction offers Undo (which finishes its rollback)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import given

from agents.actions import ScaleWorkload
from agents.model import (
    Incident,
    IncidentId,
    IncidentState,
    ObjectRef,
    PlanId,
    PlanStatus,
    Scope,
    TransactionId,
    TransactionStatus,
)
from agents.planning.plan import Plan
from agents.tnr.records import TransactionRecord
from bot.ids import ActionId
from bot.render import render_outcome, render_waiting
from bot.render.text import state_label
from tests.bot.render import strategies as s
from tests.bot.render.test_limits import PROPERTY, accepted

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SCOPE = Scope(cluster="lab", namespace="hotel")
TARGET = ObjectRef(api_version="apps/v1", kind="Deployment", name="search", namespace="hotel")
INCIDENT = Incident(
    id=IncidentId("INC-1"),
    title="search down",
    scope=SCOPE,
    state=IncidentState.HELD,
    mu0=4.0,
    opened_at=T0,
    updated_at=T0,
)
PLAN = Plan(
    id=PlanId("plan-1"),
    incident_id=INCIDENT.id,
    attempt=1,
    rank=0,
    actions=(ScaleWorkload(target=TARGET, replicas=2, from_replicas=1),),
    rationale="",
    hypothesis="",
    status=PlanStatus.EXECUTED,
    created_at=T0,
)
HELD = TransactionRecord(
    id=TransactionId("tx-1"),
    scope=SCOPE,
    status=TransactionStatus.HELD,
    incident_id=INCIDENT.id,
    plan_id=PLAN.id,
    fencing_token=1,
    mu0=4.0,
    mu_before=4.0,
    mu_after=None,
    started_at=T0,
    deadline_at=T0,
    holder="stratus",
    reason="Δ = 600s ran out — held: cannot restore Deployment/hotel/search (connection "
    "refused); 1 of 2 change(s) not restored. Undo will finish the restore.",
)


def text_of(blocks: object) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_a_held_transaction_says_what_is_not_restored_and_offers_undo() -> None:
    message = render_outcome(INCIDENT, PLAN, HELD)
    accepted(message)
    _, blocks = message.payload()
    body = text_of(blocks)
    assert "Held `tx-1`: cannot restore Deployment/hotel/search" in body
    assert "1 of 2 change(s) not restored. Undo will finish the restore." in body
    assert "Rolling back because Δ = 600s ran out" in body
    assert "healthy" not in body.replace("not healthy", "")
    [button] = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert button["action_id"] == ActionId.UNDO.value and button["value"] == "tx-1"


def test_a_transaction_that_did_not_start_says_it_wrote_nothing() -> None:
    message = render_waiting(INCIDENT, PLAN, "not started: cannot measure cluster: workloads")
    accepted(message)
    body = text_of(message.payload()[1])
    assert "*Waiting* — not started: cannot measure cluster: workloads. Nothing was written" in body


def test_the_held_state_has_a_label() -> None:
    assert state_label(IncidentState.HELD) == "Held (rollback unfinished)"


@PROPERTY
@given(s.incidents(), s.plans(), s.huge)
def test_waiting_fits_slack_limits(incident: Incident, plan: Plan, reason: str) -> None:
    accepted(render_waiting(incident, plan, reason))
