"""Every renderer, fed very long inputs, produces what the local Slack workspace's own Block
Kit validation accepts: ≤ 50 blocks per message (≤ 100 per view), section text ≤ 3,000,
button values ≤ 2,000, header and title lengths, and so on. Content that cannot fit goes into
attached files."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.detection.events import AlertsUpdated
from agents.model import Alert, Diagnosis, Incident, TimelineEvent
from agents.planning.plan import Plan
from agents.tnr import Progress, UndoResult
from agents.tnr.records import TransactionRecord
from bot.render import (
    Message,
    View,
    render_alerts_updated,
    render_announce,
    render_closed,
    render_decision,
    render_diagnosis,
    render_diagnosis_details,
    render_escalation,
    render_opened,
    render_outcome,
    render_plan,
    render_reject_modal,
    render_summary,
    render_transaction,
    render_undo_checking,
    render_undo_done,
    render_undo_drift,
    render_undo_result,
)
from lab.slack.blocks import check_message_blocks, check_view
from lab.slack.content import MAX_TEXT
from tests.bot.render import strategies as s

PROPERTY = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def accepted(message: Message) -> None:
    text, blocks = message.payload()
    errors = check_message_blocks(blocks)
    assert errors == [], errors[:5]
    assert 0 < len(text) <= MAX_TEXT
    for attachment in message.files:
        assert attachment.content and attachment.filename


def accepted_view(view: View) -> None:
    payload: dict[str, Any] = view.payload()
    errors = check_view(payload)
    assert errors == [], errors[:5]


@PROPERTY
@given(s.incidents(), st.lists(s.alerts(), max_size=40), st.lists(s.huge, max_size=8))
def test_opened(incident: Incident, alerts: list[Alert], findings: list[str]) -> None:
    accepted(render_opened(incident, alerts, findings))
    accepted(render_announce(incident, "C0123ABCD"))


@PROPERTY
@given(
    s.incidents(), st.one_of(st.none(), s.diagnoses()), st.one_of(st.none(), s.plans()), s.timeline
)
def test_summary(
    incident: Incident,
    diagnosis: Diagnosis | None,
    plan: Plan | None,
    timeline: list[TimelineEvent],
) -> None:
    accepted(render_summary(incident, diagnosis=diagnosis, plan=plan, timeline=timeline))


@PROPERTY
@given(s.incidents(), s.diagnoses())
def test_diagnosis_and_its_details(incident: Incident, diagnosis: Diagnosis) -> None:
    message = render_diagnosis(incident, diagnosis, ref="12345")
    accepted(message)
    if sum(len(e.detail) + len(e.summary) for e in diagnosis.evidence) > 3000:
        assert message.files, "long evidence goes to a file"
    accepted_view(render_diagnosis_details(incident, diagnosis))


@PROPERTY
@given(s.incidents(), s.plans(), st.lists(s.ident, max_size=5), st.booleans())
def test_plan(incident: Incident, plan: Plan, approvers: list[str], open_: bool) -> None:
    message = render_plan(incident, plan, approvers=approvers, needed=2, open_for_approval=open_)
    accepted(message)
    if sum(len(d) for d in plan.diffs) > 6000:
        assert message.files, "a long diff goes to a file"
    accepted(render_decision(incident, plan))
    accepted_view(render_reject_modal(plan, channel="C0123ABCD"))


@PROPERTY
@given(s.incidents(), s.plans(), s.transactions(), st.one_of(st.none(), s.progress), s.ident)
def test_transaction_progress_and_outcome(
    incident: Incident, plan: Plan, tx: TransactionRecord, progress: Progress | None, user: str
) -> None:
    accepted(render_transaction(plan, tx, progress))
    accepted(render_outcome(incident, plan, tx, undone_by=user))
    accepted(render_undo_done(tx, actor=user, restored=3, overwritten=1))


@PROPERTY
@given(s.incidents(), s.huge, s.huge)
def test_escalation_and_closing(incident: Incident, reason: str, runbook: str) -> None:
    message = render_escalation(incident, reason=reason, runbook=runbook)
    accepted(message)
    if len(runbook) > 3000 and runbook.strip():
        assert message.files, "a long runbook goes to a file"
    if not runbook.strip():
        assert "Runbook" not in str(message.blocks), "a blank runbook is not shown"
    accepted(render_closed(incident, reason))


@PROPERTY
@given(s.undo_results, s.ident)
def test_undo_modals(result: UndoResult, tx_id: str) -> None:
    accepted_view(render_undo_checking(tx_id))
    accepted_view(render_undo_drift(result, channel="C0123ABCD"))
    accepted_view(render_undo_result(result))


@PROPERTY
@given(s.alerts_updated)
def test_alerts_updated(event: AlertsUpdated) -> None:
    accepted(render_alerts_updated(event))
