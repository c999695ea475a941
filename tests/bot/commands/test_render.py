"""The `/stratus` renderers alone: huge or hostile inputs still give messages Slack accepts
(the local workspace's own validation says so), user text is escaped, and what was left out
is said."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agents.actions import ScaleWorkload
from agents.model import (
    Category,
    Diagnosis,
    Evidence,
    EvidenceKind,
    FaultLevel,
    FaultType,
    Hypothesis,
    Incident,
    IncidentId,
    IncidentState,
    ObjectRef,
    PlanId,
    PlanStatus,
    Scope,
    SimilarIncident,
    TimelineEvent,
    TransactionId,
    TransactionStatus,
)
from agents.planning.plan import Plan
from agents.policy import build_policy
from agents.severity import Severity
from agents.tnr.records import TransactionRecord
from bot.commands.format import bullet_lines, duration
from bot.commands.parse import Usage, Verb
from bot.commands.reads import IncidentCard, NamespaceHealth
from bot.commands.render import (
    render_adhoc_diagnosis,
    render_declared,
    render_help,
    render_incident,
    render_incidents,
    render_policy,
    render_status,
    render_usage,
)
from bot.render.blocks import Message
from lab.slack.blocks import check_message_blocks

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SCOPE = Scope(cluster="lab", namespace="hotel-reservation")
HOSTILE = "<!channel> & <https://evil.example|click> " + "x" * 5000


def valid(message: Message) -> str:
    text, blocks = message.payload()
    assert check_message_blocks(blocks) == []
    assert 0 < len(text) <= 3000
    return str(blocks)


def incident(n: int = 0, title: str = "geo down") -> Incident:
    return Incident(
        id=IncidentId(f"INC-20260105-geo-{n:04x}"),
        title=title,
        scope=SCOPE,
        state=IncidentState.AWAITING_APPROVAL,
        mu0=6.0,
        mu=3.5,
        opened_at=NOW,
        updated_at=NOW,
    )


def diagnosis(n_evidence: int = 3) -> Diagnosis:
    category = Category(level=FaultLevel.APPLICATION, type=FaultType.MISCONFIGURATION)
    return Diagnosis(
        incident_id=IncidentId("INC-1"),
        hypotheses=tuple(
            Hypothesis(
                service=f"svc{i}",
                category=category,
                confidence=0.9 - i / 10,
                explanation=HOSTILE,
                evidence=(0, 1, 99),
            )
            for i in range(5)
        ),
        evidence=tuple(
            Evidence(kind=EvidenceKind.LOG, source="logs", summary=HOSTILE, service="geo")
            for _ in range(n_evidence)
        ),
        reasoner="offline",
        summary=HOSTILE,
        similar=tuple(
            SimilarIncident(
                incident_id=IncidentId(f"INC-{i}"),
                title=HOSTILE,
                score=0.5,
                root_cause_service="geo",
                category=str(category),
                resolution=HOSTILE,
            )
            for i in range(5)
        ),
        fallback_reason=HOSTILE,
    )


def test_help_and_usage() -> None:
    assert "/stratus declare" in valid(render_help())
    shown = valid(render_usage(Usage(problem="`x` is wrong.", verb=Verb.UNDO)))
    assert "/stratus undo <transaction>" in shown
    assert "/stratus status" not in shown  # only the verb's own usage


def test_status_with_many_namespaces_and_findings() -> None:
    healths = [
        NamespaceHealth(
            namespace=f"ns-{i}",
            autonomy=build_policy({}).defaults.autonomy,
            severity=Severity(mu=float(i), findings=tuple(HOSTILE for _ in range(30))),
            open_incidents=tuple(incident(n) for n in range(10)),
            pending=(),
        )
        for i in range(80)
    ]
    shown = valid(render_status(healths))
    assert "&lt;!channel&gt;" in shown and "<!channel>" not in shown
    assert "more blocks not shown" in shown


def test_incidents_and_one_incident_with_a_long_history() -> None:
    cards = [IncidentCard(incident=incident(n, HOSTILE), diagnosis=diagnosis()) for n in range(60)]
    shown = valid(render_incidents(cards, [incident(99)]))
    assert "…and 40 more open incidents" in shown
    target = ObjectRef(api_version="apps/v1", kind="Deployment", name="geo", namespace="h")
    plan = Plan(
        id=PlanId("plan-1"),
        incident_id=IncidentId("INC-1"),
        attempt=1,
        rank=0,
        actions=tuple(ScaleWorkload(target=target, replicas=r) for r in range(1, 200)),
        rationale=HOSTILE,
        hypothesis="geo",
        status=PlanStatus.PROPOSED,
        created_at=NOW,
    )
    events = [
        TimelineEvent(
            incident_id=IncidentId("INC-1"),
            at=NOW + timedelta(seconds=i),
            state=IncidentState.PLANNING,
            kind="note",
            message=HOSTILE,
        )
        for i in range(500)
    ]
    transactions = [
        TransactionRecord(
            id=TransactionId(f"tx-{i:012d}"),
            scope=SCOPE,
            status=TransactionStatus.ABORTED,
            incident_id=None,
            plan_id=None,
            fencing_token=i,
            mu0=1.0,
            mu_before=1.0,
            mu_after=2.0,
            started_at=NOW,
            deadline_at=NOW,
            holder="t",
            reason=HOSTILE,
        )
        for i in range(100)
    ]
    shown = valid(
        render_incident(
            incident(1, HOSTILE),
            diagnosis=diagnosis(),
            plan=plan,
            transactions=transactions,
            events=events,
        )
    )
    assert "…480 earlier event(s)" in shown


def test_policy_of_many_namespaces() -> None:
    policy = build_policy(
        {
            "defaults": {"approvers": {"high": ["U0ALICE01", "@sre-leads"]}},
            "namespaces": {f"ns-{i}": {"autonomy": "observe"} for i in range(60)},
        }
    )
    shown = valid(render_policy([policy.defaults, *policy.namespaces.values()], source=HOSTILE))
    assert "<@U0ALICE01>" in shown and "`@sre-leads`" in shown  # a group is never pinged


def test_declared_and_diagnosis() -> None:
    assert "joins the open incident" in valid(render_declared(incident(), joined=True, user="U1"))
    shown = valid(
        render_adhoc_diagnosis(
            diagnosis(50), namespace="hotel-reservation", service="geo", user="U1"
        )
    )
    assert "read-only" in shown and "<!channel>" not in shown


def test_bullets_and_durations() -> None:
    lines = bullet_lines(["a" * 100] * 100, limit=1000)
    assert len(lines) <= 1000 and lines.endswith("more")
    assert bullet_lines(["x" * 5000], limit=300).startswith("• xxx")
    assert [duration(s) for s in (None, 5, 600, 7200)] == ["—", "5 s", "10 min", "2.0 h"]
