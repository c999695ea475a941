"""The `PrometheusMetrics` adapter against the real Prometheus scraping the lab: golden
signals, the call graph, firing alerts from the ALERTS series, series for charts, and a bad
query refused with the query quoted back (what the Claude reasoner's tool relies on)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agents.adapters.prometheus_metrics import PrometheusMetrics
from agents.errors import QueryError
from lab.faults import fault
from tests.integration.conftest import APP, Stack, wait_until


def test_golden_signals_call_graph_and_series(alerting_stack: Stack) -> None:
    metrics = PrometheusMetrics(alerting_stack.prometheus_url)
    try:
        signals = wait_until(
            lambda: (
                (s := metrics.golden_signals(APP, window_s=30)).get("frontend")
                and s["frontend"].request_rate > 0
                and s
            ),
            timeout_s=45,
            what="golden signals of the frontend",
        )
        frontend = signals["frontend"]
        assert frontend.error_ratio < 0.05
        assert 0 < frontend.latency_p50_ms <= frontend.latency_p99_ms
        edges = wait_until(lambda: metrics.call_graph(APP, window_s=60), timeout_s=30, what="edges")
        assert ("frontend", "search") in edges
        # Prometheus stamps samples with its own (wall) clock at scrape time.
        now = datetime.now(UTC)
        [series] = metrics.series(
            APP, "frontend", "request_rate", start=now - timedelta(minutes=1), end=now
        )
        assert series.points and all(p.value >= 0 for p in series.points)
        assert metrics.query('up{job="stratus-lab"}')[0].points[0].value == 1.0
        with pytest.raises(QueryError, match=r"sum by \(service\( rate"):
            metrics.query("sum by (service( rate(x[1m])")
    finally:
        metrics.close()


def test_firing_alerts_come_from_the_alerts_series(alerting_stack: Stack) -> None:
    metrics = PrometheusMetrics(alerting_stack.prometheus_url)
    injection = fault("scale-to-zero").inject(alerting_stack.world, app=APP)
    try:
        alerts = wait_until(
            lambda: [
                a for a in metrics.firing_alerts(APP) if a.service in ("geo", "search", "frontend")
            ],
            timeout_s=45,
            what="an alert firing for the scaled-down service's callers",
        )
        assert all(a.namespace == APP and a.severity in ("warning", "critical") for a in alerts)
        assert all(a.source == "prometheus" for a in alerts)
        # Each alert's start is its activeAt, not the instant of the query.
        later = wait_until(lambda: metrics.firing_alerts(APP), timeout_s=10, what="alerts again")
        first = {a.fingerprint: a.starts_at for a in alerts}
        assert any(a.starts_at == first.get(a.fingerprint) for a in later)
    finally:
        fault(injection.fault_id).recover(alerting_stack.world, injection)
        metrics.close()
