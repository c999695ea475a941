"""The renderers, fed what the offline reasoner and the engine really produce, break none of
the message rules (`lab.slack.lint`): no line said twice, no raw user id, no emoji the
workspace does not know, no "1 pods". Each case is a defect that once shipped."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agents.actions import PatchService
from agents.detection.events import AlertsUpdated
from agents.incident.codec import diagnosis_from_json, diagnosis_to_json
from agents.model import (
    Alert,
    AlertStatus,
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
    TimelineEvent,
    TransactionId,
    TransactionStatus,
)
from agents.planning.plan import Plan
from agents.tnr.records import TransactionRecord
from bot.render import (
    Message,
    render_alerts_updated,
    render_closed,
    render_diagnosis,
    render_escalation,
    render_opened,
    render_outcome,
    render_plan,
    render_summary,
    render_transaction,
    render_undo_done,
)
from bot.render import text as t
from bot.render.blocks import View
from lab.slack.emoji import unknown_emoji
from lab.slack.lint import message_problems

AT = datetime(2026, 1, 5, 3, 0, tzinfo=UTC)
SCOPE = Scope(cluster="lab", namespace="hotel-reservation")
CATEGORY = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.MISCONFIGURATION)
EXPLANATION = (
    "Service geo sends port 8083 to targetPort 9999, which no container of geo listens on "
    "(8083) while 1 pod is Ready; callers' connections are refused"
)


def problems(rendered: Message | View) -> list[str]:
    if isinstance(rendered, View):
        return message_problems(rendered.payload())
    text, blocks = rendered.payload()
    return message_problems({"text": text, "blocks": blocks})


def incident(state: IncidentState = IncidentState.AWAITING_APPROVAL) -> Incident:
    return Incident(
        id=IncidentId("INC-20260105-0300-geo"),
        title="frontend: error ratio 0.62 (FrontendErrors)",
        scope=SCOPE,
        state=state,
        mu0=12.0,
        opened_at=AT,
        updated_at=AT,
        service="frontend",
        attempt=0,
        mu=12.0,
        source="alertmanager",
    )


def alert(name: str) -> Alert:
    return Alert(
        fingerprint=name,
        name=name,
        status=AlertStatus.FIRING,
        labels={"service": "frontend", "severity": "page"},
        annotations={"summary": f"{name} on frontend"},
        starts_at=AT,
    )


def diagnosis() -> Diagnosis:
    top = Hypothesis(
        service="geo", category=CATEGORY, confidence=0.97, explanation=EXPLANATION, evidence=(0, 1)
    )
    return Diagnosis(
        incident_id=IncidentId("INC-20260105-0300-geo"),
        hypotheses=(top,),
        evidence=(
            Evidence(
                kind=EvidenceKind.METRIC,
                source="prometheus",
                summary="geo: CPU use at 74% of its limit (throttled)",
                service="geo",
            ),
            Evidence(
                kind=EvidenceKind.CHANGE,
                source="journal",
                summary="Service/geo spec.ports[0].targetPort 8083 → 9999 by U0BOB0002",
                service="geo",
            ),
        ),
        reasoner="offline",
        # The offline reasoner's summary repeats the explanation after its headline.
        summary=f"geo: {CATEGORY} (97%) — {EXPLANATION}",
    )


def plan(status: PlanStatus = PlanStatus.PROPOSED) -> Plan:
    service = ObjectRef(api_version="v1", kind="Service", name="geo", namespace=SCOPE.namespace)
    return Plan(
        id=PlanId("plan-1"),
        incident_id=IncidentId("INC-20260105-0300-geo"),
        attempt=1,
        rank=0,
        actions=(PatchService(target=service, ports=({"port": 8083, "targetPort": 8083},)),),
        rationale="targetPort 9999 is not a port geo's containers listen on",
        hypothesis="geo: virtualization/misconfiguration",
        status=status,
        created_at=AT,
        expires_at=AT + timedelta(minutes=30),
        diffs=("- targetPort: 9999\n+ targetPort: 8083",),
        decided_by="U0ALICE01" if status is not PlanStatus.PROPOSED else None,
    )


def tx(status: TransactionStatus, reason: str | None = None) -> TransactionRecord:
    return TransactionRecord(
        id=TransactionId("tx-1"),
        scope=SCOPE,
        status=status,
        incident_id=IncidentId("INC-20260105-0300-geo"),
        plan_id=PlanId("plan-1"),
        fencing_token=1,
        mu0=12.0,
        mu_before=12.0,
        mu_after=0.0,
        started_at=AT,
        deadline_at=AT + timedelta(minutes=10),
        ended_at=AT + timedelta(minutes=2),
        holder="stratus",
        validation={"mu_before": 12.0, "mu_after": 0.0, "settle_s": 9.0},
        reason=reason,
    )


def test_alerts_update_names_its_alerts_once() -> None:
    event = AlertsUpdated(
        incident_id=IncidentId("INC-1"),
        at=AT,
        new=(alert("FrontendErrors"), alert("GeoDown"), alert("SearchErrors")),
        resolved=(),
    )
    rendered = render_alerts_updated(event)
    assert problems(rendered) == []
    assert rendered.payload()[1][0]["elements"][0]["text"].count("GeoDown") == 1


def test_diagnosis_says_its_explanation_once_and_names_the_service_once() -> None:
    rendered = render_diagnosis(incident(), diagnosis(), ref="1")
    assert problems(rendered) == []
    _, blocks = rendered.payload()
    shown = "\n".join(str(b) for b in blocks)
    assert shown.count("which no container of geo listens on") == 1
    assert "geo: CPU" not in shown and "CPU use at 74%" in shown


def test_diagnosis_names_the_kubernetes_reason_to_search_for() -> None:
    d = diagnosis()
    with_reason = replace(d, hypotheses=(replace(d.top, reason="CreateContainerConfigError"),))
    shown = "\n".join(
        str(b) for b in render_diagnosis(incident(), with_reason, ref="1").payload()[1]
    )
    assert "`CreateContainerConfigError`" in shown and "Kubernetes reason" in shown
    none = "\n".join(str(b) for b in render_diagnosis(incident(), d, ref="1").payload()[1])
    assert "none shown" in none  # an absent reason is said, never invented


def test_a_diagnosis_keeps_its_reason_through_the_store() -> None:
    d = diagnosis()
    d = replace(d, hypotheses=(replace(d.top, reason="OOMKilled"), *d.hypotheses[1:]))
    back = diagnosis_from_json(diagnosis_to_json(d))
    assert [h.reason for h in back.hypotheses] == [h.reason for h in d.hypotheses]


def test_a_finished_transaction_is_told_once() -> None:
    committed = tx(TransactionStatus.COMMITTED, reason="μ 12 → 0 over the sustain window")
    progress = render_transaction(plan(PlanStatus.EXECUTED), committed, None)
    outcome = render_outcome(incident(), plan(PlanStatus.EXECUTED), committed)
    assert problems(progress) == [] and problems(outcome) == []
    progress_text = str(progress.payload()[1])
    assert "Set port" not in progress_text and "sustain window" not in progress_text
    assert "Set port" in str(outcome.payload()[1])


def test_undone_names_the_person_with_a_mention() -> None:
    undone = tx(TransactionStatus.UNDONE, reason="undone by U0ALICE01")
    for rendered in (
        render_transaction(plan(PlanStatus.EXECUTED), undone, None),
        render_outcome(incident(), plan(PlanStatus.EXECUTED), undone, undone_by="U0ALICE01"),
        render_undo_done(undone, actor="U0ALICE01", restored=1),
        render_undo_done(undone, actor="U0ALICE01", restored=2, overwritten=1),
    ):
        assert problems(rendered) == [], rendered
    assert "<@U0ALICE01>" in str(
        render_outcome(incident(), plan(), undone, undone_by="U0ALICE01").payload()[1]
    )
    assert t.people("undone by U0ALICE01; <@U0BOB0002>") == "undone by <@U0ALICE01>; <@U0BOB0002>"
    # The agents' timeline writes mentions; escaping them must not turn them into text.
    event = TimelineEvent(
        incident_id=IncidentId("INC-20260105-0300-geo"),
        at=AT,
        state=IncidentState.EXECUTING,
        kind="approved",
        message="Approved by <@U0ALICE01>: Set port 8083",
        data={},
    )
    summary = render_summary(incident(), diagnosis=None, plan=None, timeline=[event])
    assert problems(summary) == []
    assert "Approved by <@U0ALICE01>" in str(summary.payload()[1])


@pytest.mark.parametrize("state", list(IncidentState))
def test_every_other_message_of_an_incident(state: IncidentState) -> None:
    current = incident(state)
    for rendered in (
        render_opened(current, [alert("FrontendErrors")], ("μ0 12 = 1 alert + 11 SLO",)),
        render_summary(current, diagnosis=diagnosis(), plan=plan(), timeline=[]),
        render_plan(current, plan(), approvers=["U0ALICE01"], needed=2, open_for_approval=True),
        render_plan(current, plan(PlanStatus.EXECUTED), open_for_approval=False),
        render_escalation(current, reason="mongodb-geo refuses geo's credentials", runbook="1."),
        render_closed(current, "Incident resolved. μ 12 → 0."),
    ):
        assert problems(rendered) == [], rendered


def test_every_emoji_the_bot_uses_is_known_to_the_workspace() -> None:
    """Every `:code:` in the bot's source (renderers, commands, Home, digests)."""
    from pathlib import Path

    import bot

    unknown: dict[str, Any] = {}
    for path in Path(bot.__file__).parent.rglob("*.py"):
        for name in unknown_emoji(path.read_text()):
            if name not in ("serviceaccount",):  # system:serviceaccount:…, not an emoji
                unknown.setdefault(name, str(path))
    assert unknown == {}


def test_a_title_names_its_service_once() -> None:
    from agents.detection.opening import title_for

    scan = replace(alert("ServiceHighErrorRatio"), annotations={"summary": "geo: 69% fail"})
    assert title_for(replace(scan, labels={"service": "geo"}), SCOPE, 1) == "geo: 69% fail"
    assert title_for(alert("GeoDown"), SCOPE, 2) == "frontend: GeoDown on frontend (+1 more alert)"
