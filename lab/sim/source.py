"""`SimMetrics`: the agents' `MetricsSource` port, answered in-process from the simulator's
history in lab time.

Golden signals are evaluated with the same PromQL shapes the Prometheus adapter uses by
default (server-side `http_server_requests_total`, errors = `code=~"5.."`, latency from
`http_server_request_duration_seconds_bucket`), through the lab's PromQL subset
(`lab.sim.promql`), so the bot sees the same numbers in-process as through a real Prometheus
scraping the lab's exporter.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from agents.errors import QueryError
from agents.model import Alert, GoldenSignals, Series, SeriesPoint
from lab.sim.metrics import MetricStore
from lab.sim.promql import Evaluator, Vector

logger = logging.getLogger(__name__)

_RATE = 'sum by (service) (rate(http_server_requests_total{{namespace="{ns}"}}[{w}s]))'
_ERRORS = (
    'sum by (service) (rate(http_server_requests_total{{namespace="{ns}",code=~"5.."}}[{w}s]))'
)
_QUANTILE = (
    "histogram_quantile({q}, sum by (service, le) (rate("
    'http_server_request_duration_seconds_bucket{{namespace="{ns}"}}[{w}s])))'
)
_CALLS = 'sum by (service, peer) (increase(http_client_requests_total{{namespace="{ns}"}}[{w}s]))'
SIGNALS = ("request_rate", "error_ratio", "latency_p99_ms")


class SimMetrics:
    """Implements `agents.ports.MetricsSource` over a `MetricStore`."""

    def __init__(
        self,
        store: MetricStore,
        *,
        now: Callable[[], datetime],
        alerts: Callable[[str | None], Sequence[Alert]] | None = None,
    ) -> None:
        self._store = store
        self._now = now
        self._alerts = alerts
        self._eval = Evaluator(store)

    def _by_service(self, query: str, at: float) -> dict[str, float]:
        value = self._eval.evaluate(query, at)
        if not isinstance(value, Vector):
            return {}
        return {
            lbls["service"]: v
            for lbls, v in value.samples
            if "service" in lbls and not math.isnan(v) and not math.isinf(v)
        }

    def _signals(self, namespace: str, window_s: int, at: float) -> dict[str, GoldenSignals]:
        window_s = max(window_s, int(2 * self._store.scrape_interval_s))
        rate = self._by_service(_RATE.format(ns=namespace, w=window_s), at)
        errors = self._by_service(_ERRORS.format(ns=namespace, w=window_s), at)
        p50 = self._by_service(_QUANTILE.format(q=0.5, ns=namespace, w=window_s), at)
        p99 = self._by_service(_QUANTILE.format(q=0.99, ns=namespace, w=window_s), at)
        return {
            name: GoldenSignals(
                service=name,
                request_rate=r,
                error_ratio=errors.get(name, 0.0) / r if r > 0 else 0.0,
                latency_p50_ms=p50.get(name, 0.0) * 1000.0,
                latency_p99_ms=p99.get(name, 0.0) * 1000.0,
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
        step = max(self._store.scrape_interval_s, (end - start).total_seconds() / 200)
        points: list[SeriesPoint] = []
        at = start
        while at <= end:
            found = self._signals(namespace, 60, at.timestamp()).get(service)
            if found is not None:
                value = {
                    "request_rate": found.request_rate,
                    "error_ratio": found.error_ratio,
                    "latency_p99_ms": found.latency_p99_ms,
                }[signal]
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
        value = self._eval.evaluate(
            _CALLS.format(ns=namespace, w=window_s), self._now().timestamp()
        )
        if not isinstance(value, Vector):
            return []
        return sorted(
            {
                (lbls["service"], lbls["peer"])
                for lbls, v in value.samples
                if "service" in lbls and "peer" in lbls and v > 0
            }
        )

    def query(self, promql: str) -> Sequence[Series]:
        """An instant query at the current lab time."""
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
