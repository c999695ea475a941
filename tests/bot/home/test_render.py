"""`render_home` alone: whatever it is given, the Home view stays within Slack's limits (the
local workspace's own validation says so) and says what it left out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agents.actions import ScaleWorkload
from agents.incident.approvals import Person
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
from bot.commands.reads import IncidentCard, PendingApproval
from bot.home import HomeContent, render_home
from lab.slack.blocks import check_view

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SCOPE = Scope(cluster="lab", namespace="hotel-reservation")


def incident(n: int) -> Incident:
    return Incident(
        id=IncidentId(f"INC-20260105-svc{n}-abcd"),
        title="<b>" + "x" * 400,  # long and with characters mrkdwn must escape
        scope=SCOPE,
        state=IncidentState.AWAITING_APPROVAL,
        mu0=6.0,
        mu=3.0,
        opened_at=NOW,
        updated_at=NOW,
    )


def pending(n: int) -> PendingApproval:
    target = ObjectRef(
        api_version="apps/v1", kind="Deployment", name=f"svc{n}", namespace=SCOPE.namespace
    )
    plan = Plan(
        id=PlanId(f"plan-{n}"),
        incident_id=IncidentId(f"INC-{n}"),
        attempt=1,
        rank=0,
        actions=tuple(ScaleWorkload(target=target, replicas=r) for r in range(1, 30)),
        rationale="why",
        hypothesis="h",
        status=PlanStatus.PROPOSED,
        created_at=NOW,
        expires_at=NOW + timedelta(minutes=15),
    )
    return PendingApproval(
        incident=incident(n), plan=plan, approvers=("@sre",), approved_by=(), needed=2
    )


def transaction(n: int) -> TransactionRecord:
    return TransactionRecord(
        id=TransactionId(f"tx-{n:012d}"),
        scope=SCOPE,
        status=TransactionStatus.COMMITTED,
        incident_id=None,
        plan_id=None,
        fencing_token=n,
        mu0=1.0,
        mu_before=1.0,
        mu_after=0.0,
        started_at=NOW,
        deadline_at=NOW,
        holder="test",
        reason="r" * 2000,
    )


def test_a_crowded_home_stays_valid() -> None:
    content = HomeContent(
        viewer=Person(user_id="U0ALICE01"),
        at=NOW,
        incidents=tuple(IncidentCard(incident=incident(n), diagnosis=None) for n in range(15)),
        more_incidents=40,
        waiting=tuple(pending(n) for n in range(10)),
        transactions=tuple(transaction(n) for n in range(8)),
        notice="n" * 5000,
    )
    view = render_home(content)
    assert check_view(view) == []
    assert len(view["blocks"]) <= 100
    assert "&lt;b&gt;" in str(view["blocks"])
    assert "…and 40 more" in str(view["blocks"])


def test_an_empty_home_says_so() -> None:
    view = render_home(
        HomeContent(
            viewer=Person(user_id="U0CAROL03"),
            at=NOW,
            incidents=(),
            more_incidents=0,
            waiting=(),
            transactions=(),
        )
    )
    assert check_view(view) == []
    text = str(view["blocks"])
    assert "Nothing waits for you" in text
    assert "No committed transaction to undo" in text
