"""The detector: alerts in, incidents out — one failure, one incident.

A failure in one namespace fires alerts on several services (the callee crash-loops, its
callers' error ratios rise), so alerts are grouped by **scope** (cluster + namespace): a scope
has at most one open incident (its `group_key` is the scope key), and every later alert of that
scope joins it. For each alert the detector decides:

* resolved → update the open incident that holds it, else just record it (a resolved alert
  closes nothing: the state machine decides when an incident is over);
* firing, inside its grace period or held by the flap cooldown (`agents.detection.gate`) →
  record it, open nothing yet; `tick()` promotes it later if it is still firing;
* firing and ready → attach to the scope's open incident, or open one — unless the scope has
  none open and the alert still belongs to one that closed (`agents.detection.closure`: it
  started before that close, its window still reaches back before it, or it is an escalated
  incident's alert still firing within the hand-over cooldown); then it is recorded and
  opens nothing (yet);
* firing and ready, but raised by a disruption the cluster already repaired (a deleted pod
  replaced, every pod Ready again: `agents.detection.settling`) → held once until the
  disruption's window has passed; its own alerts resolve by then, a fault's open an incident.

A new incident records its baseline μ0 and is persisted in state DETECTED with its alerts and
a timeline event in one storage transaction, before it is announced
(`agents.detection.opening`, which also says how μ0 falls back on the alerts' weight when the
metrics lag).

Alerts that open or join nothing are recorded in the audit trail (verb `alert`), once per
change of status and disposition, so a storm of repeats is not a storm of rows.

The detector is used from the webhook handler and the scan job at once: one lock serialises
`ingest` and `tick` (the μ0 measurement included), which is what guarantees one incident per
scope within a process.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from agents.detection.closure import Belonging, Closures, Placement
from agents.detection.coalesce import Coalescer
from agents.detection.events import (
    AlertDisposition,
    AlertsUpdated,
    Detection,
    DetectorEvent,
    Disposition,
    IncidentOpened,
)
from agents.detection.gate import AlertGate, Gate
from agents.detection.opening import open_incident
from agents.detection.records import alert_record, incident_from_record
from agents.detection.settling import Repaired, Settling
from agents.model import Alert, AlertStatus, Incident, IncidentId, IncidentState, Scope
from agents.ports import Clock
from agents.severity import SeverityMeter, SeverityWeights
from storage import NotFound, Store
from storage.records import AuditVerb, StoredAudit, StoredIncident, StoredTimelineEvent

logger = logging.getLogger(__name__)

#: An alert that started this long before the replacement pod was created still counts as
#: the disruption's own (the errors start when the old pod goes, just before).
_SETTLE_SLACK = timedelta(seconds=15)
#: Alert sources evaluated by a rule engine over a window (the ones a repaired blip keeps
#: firing), which the metrics source can be asked about again.
_EVALUATED = frozenset({"alertmanager", "prometheus"})


@dataclass(frozen=True, slots=True, kw_only=True)
class DetectorConfig:
    #: Seconds an alert of each source must have been firing before it counts (missing: 0).
    #: Prometheus rules carry their own `for:`; the scan's alerts need one here.
    grace_s: Mapping[str, float] = field(default_factory=lambda: {"scan": 30.0})
    #: A resolved alert that fires again within this many seconds is a flap.
    cooldown_s: float = 300.0
    #: After an escalated close, the incident's own alerts still firing stay with the person
    #: it was handed to for this long: they do not open a new incident before.
    handover_cooldown_s: float = 1800.0
    #: How far back closed incidents are read when judging whether an alert is still theirs.
    closed_horizon_s: float = 86_400.0
    #: At most one "n new alerts" notification per incident per interval.
    update_interval_s: float = 60.0
    #: The alert weights μ0 falls back on (keep them equal to the severity meter's).
    weights: SeverityWeights = field(default_factory=SeverityWeights)
    #: Fingerprints remembered for grace and flap decisions.
    memory: int = 10_000
    #: How long an alert raised by a disruption the cluster repaired by itself is held
    #: (`agents.detection.settling`): the longest alert window plus a pod's start. 0: never.
    settle_s: float = 90.0


@dataclass(slots=True)
class _Run:
    """What one ingest/tick collects before it returns."""

    dispositions: list[AlertDisposition] = field(default_factory=list)
    events: list[DetectorEvent] = field(default_factory=list)
    audit: list[StoredAudit] = field(default_factory=list)

    def note(self, alert: Alert, disposition: Disposition, iid: str | None = None) -> None:
        self.dispositions.append(
            AlertDisposition(
                fingerprint=alert.fingerprint,
                name=alert.name,
                disposition=disposition,
                incident_id=IncidentId(iid) if iid else None,
            )
        )


class Detector:
    def __init__(
        self,
        *,
        store: Store,
        meter: SeverityMeter,
        clock: Clock,
        cluster: str,
        namespaces: Collection[str] | None = None,
        config: DetectorConfig | None = None,
        settling: Settling | None = None,
    ) -> None:
        """`namespaces`: the namespaces Stratus covers (None: all). `settling`: holds an
        alert raised by a disruption the cluster has already repaired (None: never)."""
        self._store = store
        self._meter = meter
        self._clock = clock
        self._cluster = cluster
        self._namespaces = frozenset(namespaces) if namespaces is not None else None
        self._config = config or DetectorConfig()
        self._gate = AlertGate(
            grace_s=self._config.grace_s,
            cooldown_s=self._config.cooldown_s,
            capacity=self._config.memory,
        )
        self._coalescer = Coalescer(interval_s=self._config.update_interval_s)
        self._closures = Closures(
            store,
            handover_cooldown_s=self._config.handover_cooldown_s,
            horizon_s=self._config.closed_horizon_s,
        )
        #: Alert statuses of open incidents, as last written (loaded from storage on demand).
        self._held_by: dict[str, dict[str, str]] = {}
        self._settling = settling
        #: Alerts held once for a settling disruption → the end of their hold (never again).
        self._settled: OrderedDict[str, datetime] = OrderedDict()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------ public

    def ingest(self, alerts: Iterable[Alert]) -> Detection:
        """Decide for each alert; returns the dispositions and the notifications due."""
        with self._lock:
            run = _Run()
            self._process(list(alerts), run)
            self._flush(run)
            return self._finish(run)

    def tick(self) -> Detection:
        """Promote waiting alerts whose grace or hold has run out, and send due updates.
        Call it on a schedule (the bot) or after each step (the headless driver)."""
        with self._lock:
            run = _Run()
            self._process(self._gate.due(self._clock.now()), run)
            self._flush(run)
            return self._finish(run)

    def waiting(self) -> list[Alert]:
        """Alerts recorded but not yet counted (grace or flap hold)."""
        with self._lock:
            return self._gate.waiting()

    # ------------------------------------------------------------------------------ steps

    def _scope(self, alert: Alert) -> tuple[Scope | None, Disposition | None]:
        cluster = alert.labels.get("cluster") or self._cluster
        if cluster != self._cluster:
            return None, Disposition.IGNORED
        namespace = alert.namespace
        if not namespace:
            return None, Disposition.UNSCOPED
        if self._namespaces is not None and namespace not in self._namespaces:
            return None, Disposition.IGNORED
        return Scope(cluster=cluster, namespace=namespace), None

    def _process(self, alerts: list[Alert], run: _Run) -> None:
        now = self._clock.now()
        ready, resolved = self._sort(alerts, run, now)
        for scope in sorted(set(ready) | set(resolved), key=lambda s: s.key):
            open_row = self._store.incidents.find_open_by_group_key(scope.key)
            if open_row is not None:
                self._update(open_row, ready.get(scope, []), resolved.get(scope, []), run)
                continue
            for alert in resolved.get(scope, []):
                self._record_loose(alert, scope, Disposition.RECORDED, run)
            opening = self._opening(scope, ready.get(scope, []), run, now)
            if opening:
                self._open(scope, opening, run)

    def _sort(
        self, alerts: list[Alert], run: _Run, now: datetime
    ) -> tuple[dict[Scope, list[tuple[Alert, Gate]]], dict[Scope, list[Alert]]]:
        """Per scope: the firing alerts past their gate, and the resolved ones. Alerts out of
        scope and those still pending are recorded as such."""
        ready: dict[Scope, list[tuple[Alert, Gate]]] = {}
        resolved: dict[Scope, list[Alert]] = {}
        for alert in alerts:
            scope, refused = self._scope(alert)
            if scope is None:
                assert refused is not None
                self._record_loose(alert, None, refused, run)
                continue
            if alert.status is AlertStatus.RESOLVED:
                self._settled.pop(alert.fingerprint, None)
                self._gate.resolved(alert, now)
                resolved.setdefault(scope, []).append(alert)
                continue
            gate = self._gate.check(alert, now)
            if gate is Gate.PENDING:
                self._gate.wait(alert)
                self._record_loose(alert, scope, Disposition.PENDING, run)
                continue
            ready.setdefault(scope, []).append((alert, gate))
        return ready, resolved

    def _opening(
        self, scope: Scope, firing: list[tuple[Alert, Gate]], run: _Run, now: datetime
    ) -> list[Alert]:
        """The firing alerts of a scope with no open incident that open one: not a flap, not
        a recurrence of a closed incident, not a repaired disruption still settling."""
        closed = self._closures.recent(scope, now) if firing else []
        repaired: Repaired | bool | None = False  # False: not read yet
        opening = []
        for alert, gate in firing:
            if gate is Gate.HELD:
                # A flap: it may join an open incident, but it does not open one.
                self._gate.wait(alert)
                self._record_loose(alert, scope, Disposition.HELD, run)
                continue
            verdict = self._closures.judge(alert, closed, now, self._gate.resolved_after)
            if verdict is not None:
                self._belongs(alert, scope, verdict, run)
                continue
            if self._settling is not None:
                if repaired is False and alert.fingerprint not in self._settled:
                    repaired = self._settling.repaired(scope, now)
                settled = self._settle(alert, scope, repaired, now)
                if settled is not None:
                    self._record_loose(alert, scope, settled, run)
                    continue
            opening.append(alert)
        return opening

    def _settle(
        self, alert: Alert, scope: Scope, repaired: Repaired | bool | None, now: datetime
    ) -> Disposition | None:
        """Whether a ready alert waits for a repaired disruption to settle: SETTLING while
        held (once per alert, until the disruption's window has passed), RECORDED when the
        hold ended and the alert is no longer firing (its resolution may not have been sent
        yet), None when it goes on to open an incident."""
        until = self._settled.get(alert.fingerprint)
        if until is not None:
            if now < until:
                self._gate.wait(alert, until=until)  # a re-sent report during the hold
                return Disposition.SETTLING
            if not self._still_firing(alert, scope):
                self._gate.done(alert.fingerprint)
                return Disposition.RECORDED
            return None
        if not isinstance(repaired, Repaired) or alert.source not in _EVALUATED:
            return None  # a person's declaration or the scan's own reading is never held
        if alert.starts_at < repaired.began - _SETTLE_SLACK or now >= repaired.settled_by:
            return None
        self._settled[alert.fingerprint] = repaired.settled_by
        while len(self._settled) > self._config.memory:
            self._settled.popitem(last=False)
        self._gate.wait(alert, until=repaired.settled_by)
        logger.info(
            "alert %s held until %s: %s recovered by itself from a disruption at %s",
            alert.name,
            repaired.settled_by,
            repaired.workload,
            repaired.began,
        )
        return Disposition.SETTLING

    def _still_firing(self, alert: Alert, scope: Scope) -> bool:
        """Whether the metrics source still shows the alert firing now. Alertmanager sends a
        resolution late (its group interval), so a held alert is checked where it is
        evaluated. Unknown counts as firing: an incident is the safe side of a doubt."""
        if alert.source not in _EVALUATED:
            return True
        firing = self._meter.firing_alerts(scope.namespace)
        if firing is None:
            return True
        return any(
            a.name == alert.name and a.service == alert.service and a.namespace == alert.namespace
            for a in firing
        )

    def _update(
        self,
        row: StoredIncident,
        firing: list[tuple[Alert, Gate]],
        resolved: list[Alert],
        run: _Run,
    ) -> None:
        iid = IncidentId(row.id)
        held = self._statuses(row.id)
        now = self._clock.now()
        rows, changes = [], []
        for alert in [a for a, _ in firing] + resolved:
            previous = held.get(alert.fingerprint)
            if previous is None and alert.status is AlertStatus.RESOLVED:
                scope = Scope(cluster=row.cluster, namespace=row.namespace)
                self._record_loose(alert, scope, Disposition.RECORDED, run)
                continue
            rows.append(alert_record(alert, row.id, now))
            changes.append((alert, previous))
        if not rows:
            return
        self._store.incidents.record_alerts(rows)
        for alert, previous in changes:
            self._gate.done(alert.fingerprint)
            held[alert.fingerprint] = alert.status.value
            if previous is None:
                self._coalescer.add_new(iid, alert)
                run.note(alert, Disposition.ATTACHED, row.id)
                continue
            if alert.status is AlertStatus.RESOLVED and previous != alert.status.value:
                self._coalescer.add_resolved(iid, alert)
            elif alert.status is AlertStatus.FIRING and previous != alert.status.value:
                self._coalescer.add_new(iid, alert)  # it resolved, and is back
            run.note(alert, Disposition.UPDATED, row.id)

    def _belongs(self, alert: Alert, scope: Scope, verdict: Placement, run: _Run) -> None:
        """A firing alert that is still a closed incident's: recorded, opens nothing. A
        hand-over or a lagging window is looked at again when it ends (then it may open one);
        an alert that started before the close stays that incident's until it resolves."""
        if verdict.belongs in (Belonging.HANDED_OVER, Belonging.LAGGING):
            self._gate.wait(alert, until=verdict.until)
            disposition = Disposition(verdict.belongs.value)
        else:
            self._gate.done(alert.fingerprint)
            disposition = Disposition.CLOSED
        self._record_loose(alert, scope, disposition, run, closed_incident=verdict.incident_id)

    def _open(self, scope: Scope, alerts: list[Alert], run: _Run) -> None:
        opening = open_incident(
            self._store,
            scope=scope,
            alerts=alerts,
            severity=self._meter.measure(scope),
            weights=self._config.weights,
            now=self._clock.now(),
        )
        iid = opening.incident.id
        self._held_by[iid] = {a.fingerprint: a.status.value for a in opening.alerts}
        self._coalescer.opened(iid, opening.incident.opened_at)
        run.events.append(
            IncidentOpened(
                incident=opening.incident, alerts=opening.alerts, findings=opening.findings
            )
        )
        for alert in opening.alerts:
            self._gate.done(alert.fingerprint)
            run.note(alert, Disposition.OPENED, iid)

    def _flush(self, run: _Run) -> None:
        now = self._clock.now()
        for batch in self._coalescer.due(now):
            try:
                state: IncidentState | None = IncidentState(
                    self._store.incidents.get(batch.incident_id).state
                )
            except NotFound:
                state = None
            if state is None or not state.is_open:
                self._coalescer.forget(batch.incident_id)
                self._held_by.pop(batch.incident_id, None)
                continue
            update = AlertsUpdated(
                incident_id=batch.incident_id, at=now, new=batch.new, resolved=batch.resolved
            )
            self._store.incidents.add_event(
                StoredTimelineEvent(
                    incident_id=batch.incident_id,
                    at=now,
                    state=state.value,
                    kind="alert",
                    message=update.text,
                    data={
                        "new": [a.fingerprint for a in batch.new],
                        "resolved": [a.fingerprint for a in batch.resolved],
                    },
                )
            )
            run.events.append(update)

    def _finish(self, run: _Run) -> Detection:
        if run.audit:
            self._store.audit.append_many(run.audit)
        return Detection(dispositions=tuple(run.dispositions), events=tuple(run.events))

    # ------------------------------------------------------------------------------ helpers

    def _statuses(self, iid: str) -> dict[str, str]:
        held = self._held_by.get(iid)
        if held is None:
            if len(self._held_by) > 256:  # closed incidents linger here; start afresh
                self._held_by.clear()
            held = self._held_by[iid] = {
                r.fingerprint: r.status for r in self._store.incidents.alerts(iid)
            }
        return held

    def _record_loose(
        self,
        alert: Alert,
        scope: Scope | None,
        disposition: Disposition,
        run: _Run,
        *,
        closed_incident: str | None = None,
    ) -> None:
        run.note(alert, disposition)
        if not self._gate.should_audit(alert.fingerprint, alert.status.value, disposition.value):
            return
        detail: dict[str, object] = {
            "fingerprint": alert.fingerprint,
            "alertname": alert.name,
            "status": alert.status.value,
            "disposition": disposition.value,
            "source": alert.source,
            "namespace": alert.namespace,
            "service": alert.service,
        }
        if closed_incident is not None:
            detail["incident"] = closed_incident
            detail["starts_at"] = alert.starts_at.isoformat()
        run.audit.append(
            StoredAudit(
                at=self._clock.now(),
                actor="detector",
                verb=AuditVerb.ALERT,
                scope=scope.key if scope else None,
                detail=detail,
            )
        )


def incident_of(store: Store, iid: str) -> Incident:
    """The incident as a domain value (for callers that hold only an id)."""
    return incident_from_record(store.incidents.get(iid))
