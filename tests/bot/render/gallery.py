"""The message gallery: every kind of message Stratus sends, rendered for three incidents of the
demo (a Service's wrong targetPort: committed, then undone; a crashing image: rolled back;
revoked database credentials: escalated with a runbook), plus the digest, the App Home and the
ephemeral replies.

`docs/gallery/make_gallery.py` posts them into the local workspace and screenshots each in the
browser (`docs/gallery/*.png`); `docs/gallery/*.txt` is the text a person reads in each, and
`test_gallery.py` checks both the golden text and the message rules against the renderers.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from agents.detection.events import AlertsUpdated
from agents.incident.approvals import Person
from agents.model import (
    Category,
    Evidence,
    EvidenceKind,
    FaultLevel,
    FaultType,
    Hypothesis,
    IncidentId,
    IncidentState,
    PlanStatus,
    TimelineEvent,
    TransactionStatus,
)
from agents.tnr import Progress, Step, UndoResult, UndoStatus
from bot.commands.reads import IncidentCard, PendingApproval
from bot.commands.render import render_error, render_help
from bot.digest.content import Digest, NamespaceDigest
from bot.digest.render import render_digest
from bot.home.content import HomeContent
from bot.home.render import render_home
from bot.render import (
    Message,
    View,
    render_alerts_updated,
    render_closed,
    render_decision,
    render_diagnosis,
    render_escalation,
    render_opened,
    render_outcome,
    render_plan,
    render_summary,
    render_transaction,
    render_undo_done,
    render_undo_result,
)
from lab.slack.lint import texts
from tests.bot.render.test_message_rules import AT, alert, diagnosis, incident, plan, tx

Rendered = Message | View | dict[str, Any]  # a dict: the App Home view

CREDENTIALS = Category(level=FaultLevel.APPLICATION, type=FaultType.AUTHENTICATION)
RUNBOOK = """\
**Why Stratus does not act:** mongodb-geo refuses geo's credentials; the fix is inside the
database (a user or password), which no undoable Kubernetes change restores.

1. Confirm: `kubectl -n hotel-reservation logs deploy/geo --tail=200 | grep -i auth`
2. Restore the user in mongodb-geo from your secrets store.
3. Verify: geo's error ratio falls within a minute."""


def _timeline() -> list[TimelineEvent]:
    steps = [
        (IncidentState.DETECTED, "Opened by 6 alerts"),
        (IncidentState.DIAGNOSED, "Root cause: geo (virtualization/misconfiguration, 97%)"),
        (IncidentState.AWAITING_APPROVAL, "Plan waiting for approval (medium risk)"),
        (IncidentState.EXECUTING, "Approved by <@U0ALICE01>: Set port 8083"),
        (IncidentState.COMMITTED, "Committed tx-1: healthy"),
    ]
    return [
        TimelineEvent(
            incident_id=IncidentId("INC-20260105-0300-geo"),
            at=AT + timedelta(minutes=n),
            state=state,
            kind="transition",
            message=message,
            data={},
        )
        for n, (state, message) in enumerate(steps)
    ]


def _credentials_incident() -> Any:
    return replace(
        incident(IncidentState.ESCALATED),
        id=IncidentId("INC-20260105-0420-mongodb-geo"),
        title="mongodb-geo: calls to mongodb-geo in hotel-reservation fail",
        service="mongodb-geo",
        mu0=42.0,
        mu=42.0,
    )


def _credentials_diagnosis() -> Any:
    top = Hypothesis(
        service="mongodb-geo",
        category=CREDENTIALS,
        confidence=0.9,
        explanation="geo's calls to mongodb-geo fail with 'authentication failed' while both "
        "are Ready and unchanged: mongodb-geo refuses geo's credentials",
        evidence=(0,),
    )
    return replace(
        diagnosis(),
        incident_id=IncidentId("INC-20260105-0420-mongodb-geo"),
        hypotheses=(top,),
        evidence=(
            Evidence(
                kind=EvidenceKind.LOG,
                source="pods/hotel-reservation/geo",
                summary="geo log: 12 error lines, e.g. auth error: authentication failed",
                service="geo",
            ),
        ),
        summary="",
    )


def items() -> dict[str, Rendered]:
    """Gallery name → what is posted, in the order a channel shows them."""
    geo = incident()
    closed = incident(IncidentState.CLOSED)
    proposed, executed = plan(), plan(PlanStatus.EXECUTED)
    committed = tx(TransactionStatus.COMMITTED, reason="healthy")
    running = replace(committed, status=TransactionStatus.VALIDATING, ended_at=None)
    undone = replace(committed, status=TransactionStatus.UNDONE, mu_after=12.0, reason="undone")
    aborted = replace(
        committed,
        status=TransactionStatus.ABORTED,
        mu_after=14.0,
        reason="μ after 14 > μ before 12: rolled back",
        validation={"mu_before": 12.0, "mu_after": 14.0, "severity": {"alerts": 4, "slo": 10}},
    )
    escalated_tx = replace(aborted, status=TransactionStatus.ESCALATED, reason="restore failed")
    rejected = replace(
        proposed, status=PlanStatus.REJECTED, decided_by="U0BOB0002", reject_reason="not now"
    )
    progress = Progress(
        transaction_id=running.id,
        step=Step.SUSTAIN,
        message="Sustain window: no new alerts, SLOs met (20 of 30 s)",
        done=2,
        total=3,
        mu=0.0,
    )
    credentials = _credentials_incident()
    namespace = NamespaceDigest(
        namespace="hotel-reservation",
        open_incidents=1,
        worst_mu=42.0,
        opened=3,
        resolved=2,
        escalated=1,
        mttd_s=12.0,
        mttm_s=95.0,
        committed=2,
        aborted=1,
        undone=1,
        pending_approvals=1,
    )
    home = HomeContent(
        viewer=Person(user_id="U0ALICE01"),
        at=AT + timedelta(minutes=10),
        incidents=(
            IncidentCard(incident=geo, diagnosis=diagnosis()),
            IncidentCard(incident=credentials, diagnosis=_credentials_diagnosis()),
        ),
        more_incidents=0,
        waiting=(
            PendingApproval(
                incident=geo,
                plan=proposed,
                approvers=("@sre-approvers",),
                approved_by=(),
                needed=1,
            ),
        ),
        transactions=(committed,),
    )
    return {
        "01-detected": render_opened(
            geo,
            [alert("ServiceCallErrors"), alert("ServiceHighErrorRatio")],
            ("geo: error ratio 83% (SLO 5%)",),
        ),
        "02-alerts-joined": render_alerts_updated(
            AlertsUpdated(
                incident_id=geo.id, at=AT, new=(alert("ServiceHighLatency"),), resolved=()
            )
        ),
        "03-diagnosis": render_diagnosis(geo, diagnosis(), ref="1"),
        "04-plan": render_plan(geo, proposed, needed=1, open_for_approval=True),
        "05-plan-approved": render_plan(
            geo, executed, approvers=["U0ALICE01"], open_for_approval=False
        ),
        "06-progress": render_transaction(executed, running, progress),
        "07-progress-ended": render_transaction(executed, committed, None),
        "08-committed": render_outcome(geo, executed, committed),
        "09-undone": render_outcome(geo, executed, undone, undone_by="U0ALICE01"),
        "10-undo-result": render_undo_done(undone, actor="U0ALICE01", restored=1),
        "11-resolved": render_closed(
            closed,
            "frontend: calls to frontend fail: resolved. Root cause geo "
            "(virtualization/misconfiguration). Resolution: Set port 8083 → targetPort 8083.",
        ),
        "12-summary": render_summary(
            closed, diagnosis=diagnosis(), plan=executed, timeline=_timeline()
        ),
        "13-rejected": render_decision(geo, rejected),
        "14-aborted": render_outcome(geo, executed, aborted),
        "15-escalated-transaction": render_outcome(geo, executed, escalated_tx),
        "16-escalated-runbook": render_escalation(
            credentials,
            reason="mongodb-geo refuses its clients' credentials "
            "(application/authentication): the fix is inside the database",
            runbook=RUNBOOK,
        ),
        "17-digest": render_digest(
            Digest(
                cluster="lab",
                start=AT - timedelta(hours=8),
                end=AT,
                namespaces=(namespace,),
            )
        ),
        "18-app-home": render_home(home),
        "19-undo-modal": render_undo_result(
            UndoResult(
                transaction_id=undone.id,
                status=UndoStatus.UNDONE,
                message="Restored Service/hotel-reservation/geo; μ now 12",
                restored=1,
                mu_after=12.0,
            )
        ),
        "20-ephemeral-help": render_help(),
        "21-ephemeral-refusal": render_error(
            "You are not an approver of medium-risk plans in hotel-reservation "
            "(approvers: @sre-approvers)."
        ),
    }


def blocks_of(item: Rendered) -> tuple[str, list[dict[str, Any]]]:
    """(notification text, blocks) as Slack receives them."""
    if isinstance(item, Message):
        return item.payload()
    if isinstance(item, View):
        payload = item.payload()
        return "", list(payload["blocks"])
    return "", list(item.get("blocks") or [])


def golden_text(item: Rendered) -> str:
    """What a person reads: the notification text, then each text of the blocks."""
    text, blocks = blocks_of(item)
    lines = [f"[notification] {text}"] if text else []
    lines.extend(texts(blocks))
    return "\n".join(lines) + "\n"
