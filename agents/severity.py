"""Severity μ: the externally visible health of an incident's scope (DESIGN section 3).

μ is a weighted sum of three things a user of the system would notice:

* firing alerts in the namespace, weighted by their severity label;
* SLO violations of its services — error ratio and p99 latency — in tiers, so that "80 % of
  requests fail" weighs more than "6 % fail";
* lost capacity: replicas a workload wants but does not have available, and pods that cannot
  be scheduled.

Every term is a small integer count times a weight. That is deliberate: the engine compares
μ before and after a transaction, and a sum of discrete terms does not flip on measurement
noise the way a raw ratio would. μ = 0 is healthy.

A measurement is complete or it is unknown (DESIGN section 3, rule 8). A source that does not
answer contributes nothing to μ, so μ is then only a lower bound: `unknown` names what could
not be read ("cluster: workloads", "metrics: golden signals", "metrics: alerts"), and such a
measurement is never `healthy`, whatever μ says.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agents.errors import ClusterError, MetricsError
from agents.model import Alert, Scope
from agents.ports import ClusterReader, MetricsSource

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class SeverityWeights:
    alert_critical: float = 3.0
    alert_warning: float = 1.0
    error_slo: float = 2.0  # per tier of error-ratio violation, per service
    latency_slo: float = 1.0  # per tier of latency violation, per service
    lost_replica: float = 1.0  # per unavailable replica
    unschedulable_pod: float = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Slo:
    error_ratio: float = 0.05
    latency_p99_ms: float = 800.0
    min_request_rate: float = 0.05  # below this a service's ratios are not meaningful


#: What a measurement names in `Severity.unknown` when a source did not answer.
UNKNOWN_WORKLOADS = "cluster: workloads"
UNKNOWN_PODS = "cluster: pods"
UNKNOWN_SIGNALS = "metrics: golden signals"
UNKNOWN_ALERTS = "metrics: alerts"

#: Error-ratio tiers above the SLO: a violation counts once per threshold crossed.
ERROR_TIERS = (0.25, 0.5, 0.9)
LATENCY_TIERS = (2.0, 5.0)  # multiples of the latency SLO


@dataclass(frozen=True, slots=True, kw_only=True)
class Severity:
    """One measurement of μ with its breakdown (for messages, audit records and charts)."""

    mu: float
    alerts: float = 0.0
    slo: float = 0.0
    capacity: float = 0.0
    findings: tuple[str, ...] = ()  # human lines: "geo: error ratio 83% (SLO 5%)"
    per_service: Mapping[str, float] = field(default_factory=dict)
    #: What could not be read; non-empty means μ is only a lower bound (never healthy).
    unknown: tuple[str, ...] = ()
    #: Services with any trouble now: an SLO or capacity finding, or a firing alert.
    trouble: frozenset[str] = frozenset()

    @property
    def measured_trouble(self) -> frozenset[str]:
        """Services in trouble by direct measurement (SLOs, capacity), not by alerts, which
        lag behind the fault and name callers and callees alike."""
        return frozenset(self.per_service)

    @property
    def complete(self) -> bool:
        """Every source answered: μ is a measurement, not a lower bound."""
        return not self.unknown

    @property
    def partial(self) -> bool:
        """A source failed; the figure is a lower bound (the old name of `not complete`)."""
        return bool(self.unknown)

    @property
    def healthy(self) -> bool:
        return self.complete and self.mu <= 0.0

    def unknown_text(self) -> str:
        return ", ".join(self.unknown) or "nothing"

    def as_dict(self) -> dict[str, object]:
        return {
            "mu": self.mu,
            "alerts": self.alerts,
            "slo": self.slo,
            "capacity": self.capacity,
            "findings": list(self.findings),
            "per_service": dict(self.per_service),
            "partial": self.partial,
            "complete": self.complete,
            "unknown": list(self.unknown),
        }


def error_tier(ratio: float, slo: Slo) -> int:
    if ratio <= slo.error_ratio:
        return 0
    return 1 + sum(1 for t in ERROR_TIERS if ratio > t)


def latency_tier(p99_ms: float, slo: Slo) -> int:
    if p99_ms <= slo.latency_p99_ms:
        return 0
    return 1 + sum(1 for m in LATENCY_TIERS if p99_ms > m * slo.latency_p99_ms)


@dataclass(slots=True)
class _Tally:
    """The terms of one measurement as `SeverityMeter.measure` adds them up, in the order
    their findings are reported."""

    findings: list[str] = field(default_factory=list)
    per_service: dict[str, float] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    alerts: float = 0.0
    slo: float = 0.0
    capacity: float = 0.0
    troubled: set[str] = field(default_factory=set)

    def add_service(self, name: str, score: float) -> None:
        self.per_service[name] = self.per_service.get(name, 0.0) + score

    def severity(self) -> Severity:
        return Severity(
            trouble=frozenset(self.troubled | set(self.per_service)),
            mu=round(self.alerts + self.slo + self.capacity, 3),
            alerts=self.alerts,
            slo=self.slo,
            capacity=self.capacity,
            findings=tuple(self.findings),
            per_service=self.per_service,
            unknown=tuple(self.unknown),
        )


class SeverityMeter:
    def __init__(
        self,
        *,
        reader: ClusterReader,
        metrics: MetricsSource | None,
        weights: SeverityWeights | None = None,
        slo: Slo | None = None,
        window_s: int = 60,
    ) -> None:
        self._reader = reader
        self._metrics = metrics
        self._weights = weights or SeverityWeights()
        self._slo = slo or Slo()
        self._window_s = window_s

    @property
    def slo(self) -> Slo:
        return self._slo

    def measure(
        self,
        scope: Scope,
        *,
        window_s: int | None = None,
        alerts_since: datetime | None = None,
        known_trouble: frozenset[str] = frozenset(),
    ) -> Severity:
        """μ now. `window_s`: the window of the SLO figures.

        For validation, the alert term counts only *new* trouble: alerts that started at or
        after `alerts_since`, on services not in `known_trouble` (those already failing before
        the transaction). Alert rules smooth over windows and have `for:` delays, so alerts
        about a fault keep starting — and keep firing — minutes after the fact; the SLO and
        capacity terms, measured over the window, say how the scope is doing now."""
        tally = _Tally()
        if self._metrics is not None:
            self._count_alerts(
                tally, self._metrics, scope, alerts_since=alerts_since, known_trouble=known_trouble
            )
            self._count_slos(tally, self._metrics, scope, window_s=window_s or self._window_s)
        self._count_workloads(tally, scope)
        self._count_unschedulable(tally, scope)
        return tally.severity()

    def _count_alerts(
        self,
        tally: _Tally,
        metrics: MetricsSource,
        scope: Scope,
        *,
        alerts_since: datetime | None,
        known_trouble: frozenset[str],
    ) -> None:
        w = self._weights
        try:
            firing: Sequence[Alert] = metrics.firing_alerts(scope.namespace)
        except MetricsError as e:
            logger.warning("severity of %s without alerts: %s", scope.key, e)
            tally.unknown.append(UNKNOWN_ALERTS)
            firing = ()
        for alert in firing:
            if alert.service:
                tally.troubled.add(alert.service)
            if alerts_since is not None and (
                alert.starts_at < alerts_since or alert.service in known_trouble
            ):
                continue
            weight = w.alert_critical if alert.severity == "critical" else w.alert_warning
            tally.alerts += weight
            tally.findings.append(f"alert {alert.name} firing ({alert.service or 'namespace'})")

    def _count_slos(
        self, tally: _Tally, metrics: MetricsSource, scope: Scope, *, window_s: int
    ) -> None:
        w = self._weights
        try:
            signals = metrics.golden_signals(scope.namespace, window_s=window_s)
        except MetricsError as e:
            logger.warning("severity of %s without golden signals: %s", scope.key, e)
            tally.unknown.append(UNKNOWN_SIGNALS)
            signals = {}
        for name, s in sorted(signals.items()):
            if s.request_rate < self._slo.min_request_rate:
                continue
            e_tier = error_tier(s.error_ratio, self._slo)
            l_tier = latency_tier(s.latency_p99_ms, self._slo)
            score = e_tier * w.error_slo + l_tier * w.latency_slo
            if e_tier:
                tally.findings.append(
                    f"{name}: error ratio {s.error_ratio:.0%} (SLO {self._slo.error_ratio:.0%})"
                )
            if l_tier:
                tally.findings.append(
                    f"{name}: p99 latency {s.latency_p99_ms:.0f} ms "
                    f"(SLO {self._slo.latency_p99_ms:.0f} ms)"
                )
            if score:
                tally.add_service(name, score)
                tally.slo += score

    def _count_workloads(self, tally: _Tally, scope: Scope) -> None:
        w = self._weights
        try:
            workloads = self._reader.workloads(scope.namespace)
        except ClusterError as e:
            logger.warning("severity of %s without workloads: %s", scope.key, e)
            tally.unknown.append(UNKNOWN_WORKLOADS)
            workloads = ()
        for wl in workloads:
            lost = wl.lost_replicas
            if lost:
                tally.capacity += lost * w.lost_replica
                tally.add_service(wl.name, lost * w.lost_replica)
                tally.findings.append(
                    f"{wl.name}: {wl.available_replicas}/{wl.replicas} available, "
                    f"{wl.updated_replicas}/{wl.replicas} updated"
                )

    def _count_unschedulable(self, tally: _Tally, scope: Scope) -> None:
        try:
            # A cluster that did not answer for workloads is not asked again (each call can
            # block up to its deadline): the measurement is incomplete already.
            pods = () if UNKNOWN_WORKLOADS in tally.unknown else self._reader.pods(scope.namespace)
            pending = [p for p in pods if p.unschedulable_message]
        except ClusterError as e:
            logger.warning("severity of %s without pods: %s", scope.key, e)
            tally.unknown.append(UNKNOWN_PODS)
            pending = []
        if pending:
            tally.capacity += len(pending) * self._weights.unschedulable_pod
            tally.findings.append(f"{len(pending)} pod(s) cannot be scheduled")

    def callers_of(self, namespace: str, services: frozenset[str]) -> frozenset[str] | None:
        """Every service that calls one of `services`, directly or through others, by the
        observed call graph: where a failure of `services` spreads on its own. None when the
        graph cannot be read (unknown is not "no callers"); () without a metrics source."""
        if self._metrics is None:
            return frozenset()
        try:
            edges = self._metrics.call_graph(namespace)
        except MetricsError as e:
            logger.warning("cannot read the call graph of %s: %s", namespace, e)
            return None
        reached: set[str] = set()
        frontier = set(services)
        while frontier:
            step = {caller for caller, callee in edges if callee in frontier} - reached
            reached |= step
            frontier = step
        return frozenset(reached - services)

    def firing_alerts(self, namespace: str) -> tuple[Alert, ...] | None:
        """The alerts firing in `namespace` now; None when they cannot be read (unknown is
        not "none"). Without a metrics source there is nothing to ask: ()."""
        if self._metrics is None:
            return ()
        try:
            return tuple(self._metrics.firing_alerts(namespace))
        except MetricsError as e:
            logger.warning("cannot read the alerts of %s: %s", namespace, e)
            return None
