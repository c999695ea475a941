"""`SimMetrics`: the agents' `MetricsSource` port, answered in-process from the simulator's
history in lab time.

Golden signals, the call graph and chart series are read with the PromQL of a `SignalProfile`
(`agents.adapters.signal_profiles`), as `PrometheusMetrics` reads them, through the lab's
PromQL subset (`lab.sim.promql`). Under a convention other than the lab's, the queries run over
a `ConventionView` of the store: the history as a Prometheus scraping the exporter in that
convention would hold it. So the bot sees in-process the numbers it would see through a real
Prometheus, under any built-in profile; and a signal the profile cannot read raises
`MetricsError`, as it does there (unknown, never zero).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from agents.adapters.signal_profiles import CALL_GRAPH, PROFILES, SignalProfile, render, unreadable
from agents.errors import MetricsError, QueryError
from agents.model import Alert, GoldenSignals, Series, SeriesPoint
from lab.sim.convention_view import ConventionView
from lab.sim.metrics import MetricStore
from lab.sim.promql import Evaluator, History, Vector

logger = logging.getLogger(__name__)

SIGNALS = ("request_rate", "error_ratio", "latency_p99_ms")
#: The profile's signals each charted series is computed from (as `PrometheusMetrics` charts
#: them); the request rate is read for every chart, since a point exists where the service
#: served requests.
_CHARTED: dict[str, tuple[str, ...]] = {
    "request_rate": ("request_rate",),
    "error_ratio": ("request_rate", "error_rate"),
    "latency_p99_ms": ("request_rate", "latency_p99"),
}


class SimMetrics:
    """Implements `agents.ports.MetricsSource` over a `MetricStore`.

    `signals` is the metric convention the history is read in (`lab.sim.conventions`; the
    exporter's `--signals`), `profile` the queries (default: the built-in profile of that
    name). The default, `lab`, evaluates over the store itself."""

    def __init__(
        self,
        store: MetricStore,
        *,
        now: Callable[[], datetime],
        alerts: Callable[[str | None], Sequence[Alert]] | None = None,
        signals: str = "lab",
        profile: SignalProfile | None = None,
    ) -> None:
        self._store = store
        self._now = now
        self._alerts = alerts
        # The view first: it refuses a convention the exporter does not speak (ValueError).
        history: History = store if signals == "lab" else ConventionView(store, signals)
        self.signals = signals
        self.profile = profile or PROFILES[signals]
        self._eval = Evaluator(history)

    def _template(self, signal: str) -> str:
        template = self.profile.template(signal)
        if template is None:
            raise unreadable(self.profile, signal)
        return template

    def _by_service(
        self, signal: str, namespace: str, window_s: int, at: float
    ) -> dict[str, float]:
        query = render(self._template(signal), namespace=namespace, window_s=window_s)
        value = self._eval.evaluate(query, at)
        if not isinstance(value, Vector):
            return {}
        label = self.profile.service_label
        return {
            lbls[label]: v
            for lbls, v in value.samples
            if label in lbls and not math.isnan(v) and not math.isinf(v)
        }

    def _read(
        self, signals: Sequence[str], namespace: str, window_s: int, at: float
    ) -> dict[str, dict[str, float]]:
        """Each of the profile's `signals` by service (`MetricsError` for one it lacks)."""
        window_s = max(window_s, int(2 * self._store.scrape_interval_s))
        return {s: self._by_service(s, namespace, window_s, at) for s in signals}

    def _signals(self, namespace: str, window_s: int, at: float) -> dict[str, GoldenSignals]:
        read = self._read(
            ("request_rate", "error_rate", "latency_p50", "latency_p99"), namespace, window_s, at
        )
        rate, errors, p50, p99 = (
            read["request_rate"],
            read["error_rate"],
            read["latency_p50"],
            read["latency_p99"],
        )
        to_ms = self.profile.latency_unit.to_ms
        return {
            name: GoldenSignals(
                service=name,
                request_rate=r,
                error_ratio=errors.get(name, 0.0) / r if r > 0 else 0.0,
                latency_p50_ms=p50.get(name, 0.0) * to_ms,
                latency_p99_ms=p99.get(name, 0.0) * to_ms,
            )
            for name, r in rate.items()
        }

    def golden_signals(
        self, namespace: str, services: Sequence[str] | None = None, *, window_s: int = 60
    ) -> Mapping[str, GoldenSignals]:
        found = self._signals(namespace, window_s, self._now().timestamp())
        if services is None:
            return dict(sorted(found.items()))
        return {
            name: found.get(
                name,
                GoldenSignals(
                    service=name,
                    request_rate=0.0,
                    error_ratio=0.0,
                    latency_p50_ms=0.0,
                    latency_p99_ms=0.0,
                ),
            )
            for name in services
        }

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Alert]:
        return list(self._alerts(namespace)) if self._alerts is not None else []

    def series(
        self, namespace: str, service: str, signal: str, *, start: datetime, end: datetime
    ) -> Sequence[Series]:
        if signal not in SIGNALS:
            raise QueryError(signal, f"unknown signal; use one of {', '.join(SIGNALS)}")
        needed = _CHARTED[signal]
        for name in needed:
            self._template(name)  # refuse a signal the profile lacks even with no points
        to_ms = self.profile.latency_unit.to_ms
        step = max(self._store.scrape_interval_s, (end - start).total_seconds() / 200)
        points: list[SeriesPoint] = []
        at = start
        while at <= end:
            read = self._read(needed, namespace, 60, at.timestamp())
            rate = read["request_rate"].get(service)
            if rate is not None:
                if signal == "request_rate":
                    value = rate
                elif signal == "error_ratio":
                    value = read["error_rate"].get(service, 0.0) / rate if rate > 0 else 0.0
                else:
                    value = read["latency_p99"].get(service, 0.0) * to_ms
                points.append(SeriesPoint(at=at, value=value))
            at += timedelta(seconds=step)
        if not points:
            return []
        return [
            Series(
                name=signal,
                labels={"namespace": namespace, "service": service},
                points=tuple(points),
            )
        ]

    def call_graph(self, namespace: str, *, window_s: int = 300) -> Sequence[tuple[str, str]]:
        labels = self.profile.call_graph_labels
        template = self._template(CALL_GRAPH)
        if labels is None:  # a profile file is checked for this; a built-in has both
            raise MetricsError(f"signal profile {self.profile.name} names no peer label")
        caller_label, peer_label = labels
        value = self._eval.evaluate(
            render(template, namespace=namespace, window_s=window_s), self._now().timestamp()
        )
        if not isinstance(value, Vector):
            return []
        return sorted(
            {
                (lbls[caller_label], lbls[peer_label])
                for lbls, v in value.samples
                if caller_label in lbls and peer_label in lbls and v > 0
            }
        )

    def query(self, promql: str) -> Sequence[Series]:
        """An instant query at the current lab time, in the names of the convention the
        history is read in (what Prometheus would answer); kube-state and cAdvisor series are
        the same under every convention."""
        now = self._now()
        value = self._eval.evaluate(promql, now.timestamp())
        if isinstance(value, float):
            return [Series(name="scalar", labels={}, points=(SeriesPoint(at=now, value=value),))]
        return [
            Series(
                name=lbls.get("__name__", promql),
                labels=dict(lbls),
                points=(SeriesPoint(at=now.astimezone(UTC), value=v),),
            )
            for lbls, v in value.samples
        ]
