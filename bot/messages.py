"""What an incident's channel should show, computed from storage.

Every message Stratus keeps about an incident is a function of what is persisted — the
incident and its alerts, its diagnoses, plans and approvals, its transactions (and the latest
progress of a running one), its escalations and its end. The notifier compares this list
with the messages it already posted and posts what is missing and updates what changed, so a
post that failed, a restart, or an event handled twice all end in the same channel.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from agents.detection.records import alert_from_record, incident_from_record
from agents.errors import MetricsError
from agents.incident.codec import diagnosis_from_json, plan_from_record
from agents.incident.machine import current_plan
from agents.model import (
    Diagnosis,
    Incident,
    IncidentId,
    IncidentState,
    PlanStatus,
    Series,
    TimelineEvent,
    TransactionStatus,
)
from agents.planning.plan import Plan
from agents.policy import Policy
from agents.ports import Clock, MetricsSource
from agents.tnr import Progress
from agents.tnr.records import TransactionRecord
from bot.errors import ChartFailed
from bot.ids import MessageKind
from bot.render import (
    Message,
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
    render_waiting,
)
from storage import Store
from storage.records import AuditVerb, StoredPlan, StoredTimelineEvent

logger = logging.getLogger(__name__)

_ORDER = {kind: n for n, kind in enumerate(MessageKind)}
_FINISHED = frozenset(
    {
        TransactionStatus.COMMITTED,
        TransactionStatus.ABORTED,
        TransactionStatus.ESCALATED,
        TransactionStatus.UNDOING,
        TransactionStatus.UNDONE,
        TransactionStatus.HELD,
    }
)

#: A diagnosis chart: PNG bytes for the signals around an incident (None: no chart).
DiagnosisChart = Callable[[Incident, Diagnosis], bytes | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Wanted:
    """One message the channel should hold."""

    kind: MessageKind
    ref: str
    at: datetime
    message: Message
    updatable: bool = True  # False: posted once, never edited (the opening, a diagnosis)
    chart: Callable[[], bytes | None] | None = None  # uploaded after the first post

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind.value, self.ref)

    @property
    def order(self) -> tuple[datetime, int]:
        return (self.at, _ORDER[self.kind])


def timeline_event(row: StoredTimelineEvent) -> TimelineEvent:
    return TimelineEvent(
        incident_id=IncidentId(row.incident_id),
        at=row.at,
        state=IncidentState(row.state),
        kind=row.kind,
        message=row.message,
        data=dict(row.data or {}),
    )


class IncidentMessages:
    def __init__(
        self,
        *,
        store: Store,
        policy: Policy,
        clock: Clock,
        transactions: Callable[[str], list[TransactionRecord]],
        chart: DiagnosisChart | None = None,
    ) -> None:
        self._store = store
        self._policy = policy
        self._clock = clock
        self._transactions = transactions
        self._chart = chart

    def incident(self, incident_id: str) -> Incident:
        return incident_from_record(self._store.incidents.get(incident_id))

    def root_cause(self, incident: Incident) -> str:
        """The latest diagnosis's root-cause service ('' before the first diagnosis)."""
        row = self._store.diagnoses.latest(incident.id)
        return diagnosis_from_json(row.body).root_cause_service if row is not None else ""

    def summary(self, incident: Incident) -> Message:
        diagnosis_record = self._store.diagnoses.latest(incident.id)
        diagnosis = diagnosis_from_json(diagnosis_record.body) if diagnosis_record else None
        timeline = [timeline_event(r) for r in self._store.incidents.timeline(incident.id)]
        return render_summary(
            incident,
            diagnosis=diagnosis,
            plan=current_plan(self._store, incident.id),
            timeline=timeline,
        )

    def wanted(
        self,
        incident: Incident,
        *,
        progress: Mapping[str, Progress],
        findings: tuple[str, ...] = (),
    ) -> list[Wanted]:
        """Every message the incident's channel should hold, oldest first."""
        out = [*self._opening(incident, findings), *self._diagnoses(incident)]
        plan_rows = [r for r in self._store.plans.list_for_incident(incident.id) if r.rank == 0]
        plans = {r.id: plan_from_record(r) for r in plan_rows}
        out += [
            *self._plans(incident, plan_rows, plans),
            *self._transactions_of(incident, plans, progress),
            *self._timeline(incident, plans),
            *self._closed(incident),
        ]
        return sorted(out, key=lambda w: w.order)

    def _opening(self, incident: Incident, findings: tuple[str, ...]) -> list[Wanted]:
        summary = Wanted(
            kind=MessageKind.SUMMARY,
            ref=incident.id,
            at=incident.opened_at,
            message=self.summary(incident),
        )
        alerts = [
            alert_from_record(r, source=incident.source)
            for r in self._store.incidents.alerts(incident.id)
        ]
        return [
            summary,
            Wanted(
                kind=MessageKind.OPENED,
                ref=incident.id,
                at=incident.opened_at,
                message=render_opened(incident, alerts, findings),
                updatable=False,
            ),
        ]

    def _diagnoses(self, incident: Incident) -> list[Wanted]:
        out: list[Wanted] = []
        for diagnosis_record in self._store.diagnoses.list_for_incident(incident.id):
            diagnosis = diagnosis_from_json(diagnosis_record.body)
            out.append(
                Wanted(
                    kind=MessageKind.DIAGNOSIS,
                    ref=str(diagnosis_record.id),
                    at=diagnosis_record.created_at,
                    message=render_diagnosis(incident, diagnosis, ref=str(diagnosis_record.id)),
                    updatable=False,
                    chart=self._chart_of(incident, diagnosis),
                )
            )
        return out

    def _plans(
        self, incident: Incident, plan_rows: list[StoredPlan], plans: Mapping[str, Plan]
    ) -> list[Wanted]:
        """Each top-ranked plan, and the decision under each rejected one."""
        current = current_plan(self._store, incident.id)
        out: list[Wanted] = []
        for row in plan_rows:
            plan = plans[row.id]
            out.append(self._plan(incident, plan, row, current))
            if plan.status is PlanStatus.REJECTED:
                out.append(
                    Wanted(
                        kind=MessageKind.DECISION,
                        ref=plan.id,
                        at=row.decided_at or row.created_at,
                        message=render_decision(incident, plan),
                        updatable=False,
                    )
                )
        return out

    def _transactions_of(
        self, incident: Incident, plans: Mapping[str, Plan], progress: Mapping[str, Progress]
    ) -> list[Wanted]:
        """Each transaction of a shown plan, with its outcome (and undo) once it has ended."""
        out: list[Wanted] = []
        for tx in self._transactions(incident.id):
            tx_plan = plans.get(tx.plan_id or "")
            if tx_plan is None:
                continue
            out.append(
                Wanted(
                    kind=MessageKind.TRANSACTION,
                    ref=tx.id,
                    at=tx.started_at,
                    message=render_transaction(tx_plan, tx, progress.get(tx.id)),
                )
            )
            if tx.status in _FINISHED:
                out.extend(self._ended(incident, tx_plan, tx))
        return out

    def _ended(self, incident: Incident, plan: Plan, tx: TransactionRecord) -> list[Wanted]:
        undone = self._undone(tx)
        out = [
            Wanted(
                kind=MessageKind.OUTCOME,
                ref=tx.id,
                at=tx.ended_at or tx.started_at,
                message=render_outcome(incident, plan, tx, undone_by=undone[0] if undone else None),
            )
        ]
        if undone is not None:
            actor, restored, overwritten, at = undone
            out.append(
                Wanted(
                    kind=MessageKind.UNDO,
                    ref=tx.id,
                    at=at,
                    message=render_undo_done(
                        tx, actor=actor, restored=restored, overwritten=overwritten
                    ),
                    updatable=False,
                )
            )
        return out

    def _timeline(self, incident: Incident, plans: Mapping[str, Plan]) -> list[Wanted]:
        """The waits and escalations recorded on the incident's timeline."""
        out: list[Wanted] = []
        for event in self._store.incidents.timeline(incident.id):
            waiting = _waiting(incident, event, plans)
            if waiting is not None:
                out.append(waiting)
            escalation = _escalation(incident, event)
            if escalation is not None:
                out.append(escalation)
        return out

    def _closed(self, incident: Incident) -> list[Wanted]:
        if incident.state is not IncidentState.CLOSED:
            return []
        incident_row = self._store.incidents.get(incident.id)
        return [
            Wanted(
                kind=MessageKind.CLOSED,
                ref=incident.id,
                at=incident.closed_at or incident.updated_at,
                message=render_closed(incident, incident_row.summary or ""),
                updatable=False,
            )
        ]

    def _plan(
        self, incident: Incident, plan: Plan, row: StoredPlan, current: Plan | None
    ) -> Wanted:
        policy = self._policy.for_namespace(incident.scope.namespace)
        approvers = [
            a.user_id
            for a in self._store.approvals.list_for_plan(plan.id)
            if a.content_hash == plan.content_hash
        ]
        open_for_approval = (
            incident.state is IncidentState.AWAITING_APPROVAL
            and current is not None
            and current.id == plan.id
        )
        return Wanted(
            kind=MessageKind.PLAN,
            ref=plan.id,
            at=row.created_at,
            message=render_plan(
                incident,
                plan,
                approvers=approvers,
                needed=policy.approvals_needed(plan.risk),
                open_for_approval=open_for_approval,
            ),
        )

    def _undone(self, tx: TransactionRecord) -> tuple[str, int, int, datetime] | None:
        if tx.status is not TransactionStatus.UNDONE:
            return None
        records = self._store.audit.query(transaction_id=tx.id, verb=AuditVerb.UNDONE)
        if not records:
            return ("stratus", 0, 0, tx.ended_at or tx.started_at)
        record = records[-1]
        detail = record.detail or {}
        overwritten = detail.get("overwritten") or {}
        return (
            record.actor,
            int(detail.get("restored", 0) or 0),
            len(overwritten) if isinstance(overwritten, dict) else 0,
            record.at,
        )

    def _chart_of(
        self, incident: Incident, diagnosis: Diagnosis
    ) -> Callable[[], bytes | None] | None:
        chart = self._chart
        if chart is None:
            return None
        return lambda: chart(incident, diagnosis)


def _waiting(
    incident: Incident, event: StoredTimelineEvent, plans: Mapping[str, Plan]
) -> Wanted | None:
    waiting_for = (event.data or {}).get("not_started")
    if not (waiting_for and waiting_for in plans):
        return None
    return Wanted(
        kind=MessageKind.WAITING,
        ref=str(event.id),
        at=event.at,
        message=render_waiting(incident, plans[waiting_for], str(event.data.get("reason", ""))),
        updatable=False,
    )


def _escalation(incident: Incident, event: StoredTimelineEvent) -> Wanted | None:
    if not (event.state == IncidentState.ESCALATED.value and "runbook" in (event.data or {})):
        return None
    return Wanted(
        kind=MessageKind.ESCALATION,
        ref=str(event.id),
        at=event.at,
        message=render_escalation(
            incident,
            reason=str(event.data.get("reason", "")),
            runbook=str(event.data.get("runbook", "")),
        ),
        updatable=False,
    )


def signal_chart(metrics: MetricsSource, clock: Clock) -> DiagnosisChart:
    """The diagnosis chart: error ratio and p99 latency of the root-cause service and of the
    service the alerts point at, from 15 minutes before detection, with detection marked."""
    from bot.chart_process import charts
    from bot.charts import Marker, MarkerKind

    def draw(incident: Incident, diagnosis: Diagnosis) -> bytes | None:
        services = list(
            dict.fromkeys(s for s in (diagnosis.root_cause_service, incident.service) if s)
        )
        start = incident.opened_at - timedelta(minutes=15)
        end = clock.now()
        series: list[Series] = []
        try:
            for service in services:
                series.extend(
                    metrics.series(
                        incident.scope.namespace, service, "error_ratio", start=start, end=end
                    )
                )
        except MetricsError as e:
            logger.warning("incident %s: no chart, the metrics failed: %s", incident.id, e)
            return None
        if not any(s.points for s in series):
            return None
        try:
            return charts().signal_chart(
                series,
                title=f"{incident.id}: error ratio",
                markers=[
                    Marker(at=incident.opened_at, label="detected", kind=MarkerKind.DETECTION)
                ],
                unit="error ratio",
            )
        except ChartFailed as e:
            logger.warning("incident %s: no chart: %s", incident.id, e)
            return None

    return draw
