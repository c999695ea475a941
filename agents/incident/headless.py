"""The headless driver: detection and the incident loop without Slack.

Used by `stratus demo --headless`, the benchmark and the tests. Each `step` does what the bot's
scheduler and listeners do, in one thread and in a fixed order, so that a stepped lab clock
makes a run reproducible: sync the change journal, collect alerts (the metrics source's firing
alerts and the periodic scan), let the detector open or update incidents, then drive every open
incident as far as it goes — approving plans through `approver` when one is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agents.detection.detector import Detector
from agents.detection.events import Detection
from agents.detection.scan import Scanner
from agents.errors import StratusError
from agents.incident.approvals import Approvals, Person, Verdict
from agents.incident.machine import END, IncidentMachine
from agents.journal import ChangeJournal
from agents.model import Alert, Incident, IncidentState
from agents.planning.plan import Plan
from agents.ports import Clock, ClusterReader, MetricsSource

logger = logging.getLogger(__name__)

#: Given a plan waiting for approval, who approves it (None: leave it waiting).
Approver = Callable[[Plan], Sequence[Person]]


def auto_approve(plan: Plan) -> Sequence[Person]:
    """Approve everything, with two distinct people so the two-person rule is met too."""
    return (Person(user_id="U0AUTO001"), Person(user_id="U0AUTO002"))


def never_approve(plan: Plan) -> Sequence[Person]:
    return ()


@dataclass(slots=True)
class StepReport:
    alerts: int = 0
    opened: list[str] = field(default_factory=list)
    states: dict[str, IncidentState] = field(default_factory=dict)


class HeadlessLoop:
    def __init__(
        self,
        *,
        machine: IncidentMachine,
        detector: Detector,
        clock: Clock,
        reader: ClusterReader,
        metrics: MetricsSource | None = None,
        scanner: Scanner | None = None,
        journal: ChangeJournal | None = None,
        approver: Approver = auto_approve,
        namespaces: Sequence[str] | None = None,
        on_detection: Callable[[Detection], None] | None = None,
        scan_every_s: float = 0.0,
    ) -> None:
        """`on_detection` sees each ingest's result (the detector's notifications: incident
        opened, alerts updated) before the incidents are driven. `scan_every_s` spaces the
        periodic scan as the bot's scheduler does (`STRATUS_SCAN_INTERVAL_S`); 0 scans at
        every step."""
        self.machine = machine
        self.approvals = Approvals(machine)
        self._detector = detector
        self._clock = clock
        self._reader = reader
        self._metrics = metrics
        self._scanner = scanner
        self._journal = journal
        if journal is not None:
            # No watcher feeds it here: a diagnosis in the middle of a step (after a
            # validation moved the clock) must still see the changes made meanwhile.
            journal.follow(reader)
        self._approver = approver
        self._namespaces = namespaces
        self._on_detection = on_detection
        self._scan_every_s = scan_every_s
        self._scanned_at: datetime | None = None

    def collect_alerts(self) -> list[Alert]:
        """What the sources say is firing. A source that fails this step adds nothing (as
        Alertmanager that cannot reach the bot sends nothing): no alert is inferred from an
        outage, and none resolved by one — the detector resolves only what it is told."""
        alerts: list[Alert] = []
        if self._metrics is not None:
            for namespace in self._namespaces or (None,):
                try:
                    alerts.extend(self._metrics.firing_alerts(namespace))
                except StratusError as e:
                    logger.warning("firing alerts of %s unavailable: %s", namespace, e)
        if self._scanner is not None and self._scan_due():
            try:
                alerts.extend(self._scanner.scan())
            except StratusError as e:
                logger.warning("scan unavailable: %s", e)
        return alerts

    def _scan_due(self) -> bool:
        now = self._clock.now()
        if (
            self._scanned_at is not None
            and (now - self._scanned_at).total_seconds() < self._scan_every_s
        ):
            return False
        self._scanned_at = now
        return True

    def step(self) -> StepReport:
        report = StepReport()
        if self._journal is not None:
            self._journal.sync(self._reader)
        alerts = self.collect_alerts()
        report.alerts = len(alerts)
        detection = self._detector.ingest(alerts)
        ticked = self._detector.tick()
        if self._on_detection is not None:
            self._on_detection(detection)
            self._on_detection(ticked)
        report.opened = [i.id for i in detection.opened]
        for row in self.machine.store.incidents.list_open():
            report.states[row.id] = self.drive(row.id)
        return report

    def drive(self, incident_id: str) -> IncidentState:
        state = self.machine.drive(incident_id)
        while state is IncidentState.AWAITING_APPROVAL:
            plan = self.machine.current_plan(incident_id)
            if plan is None:
                break
            approved = False
            for person in self._approver(plan):
                decision = self.approvals.approve(plan.id, person, content_hash=plan.content_hash)
                logger.info(
                    "headless approval of %s by %s: %s", plan.id, person.user_id, decision.verdict
                )
                approved = approved or decision.verdict is Verdict.APPROVED
                if decision.verdict is Verdict.REFUSED:
                    break
            if not approved:
                break
            state = self.machine.drive(incident_id)
        return state

    def run(self, *, until: Callable[[], bool], timeout_s: float, step_s: float = 5.0) -> bool:
        """Step every `step_s` (clock time) until `until()` or `timeout_s` passes."""
        started = self._clock.monotonic()
        while True:
            self.step()
            if until():
                return True
            if self._clock.monotonic() - started >= timeout_s:
                return False
            self._clock.sleep(step_s)

    def incidents(self) -> list[Incident]:
        return [
            self.machine.incident(r.id)
            for r in self.machine.store.incidents.list_by_state(*[s.value for s in IncidentState])
        ]

    def ended(self, incident_id: str) -> bool:
        return self.machine.incident(incident_id).state in END
