"""The simulator's telemetry: the in-process MetricsSource and the /metrics endpoint."""

from __future__ import annotations

import urllib.request
from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from agents.errors import QueryError
from lab.sim.exporter import MetricsExporter
from lab.sim.source import SimMetrics
from tests.lab.sim.harness import FakeLab

HOTEL = "hotel-reservation"


@pytest.fixture(scope="module")
def lab() -> FakeLab:
    lab = FakeLab(HOTEL)
    lab.step(90)
    lab.cluster.mutate(
        "Service", HOTEL, "geo", lambda s: s["spec"]["ports"][0].__setitem__("targetPort", 9999)
    )
    lab.step(60)
    return lab


def test_golden_signals_follow_the_server_side_counters(lab: FakeLab) -> None:
    metrics = SimMetrics(lab.sim.store, now=lambda: lab.now)
    signals = metrics.golden_signals(HOTEL, window_s=30)
    snap = lab.snap(HOTEL)
    assert signals["search"].error_ratio == pytest.approx(1.0)
    assert signals["frontend"].error_ratio == pytest.approx(
        snap.services["frontend"].server_error_ratio, rel=0.05
    )
    assert signals["frontend"].request_rate == pytest.approx(snap.entry_rps, rel=0.1)
    assert "geo" not in signals or signals["geo"].request_rate == 0.0  # nothing reaches geo
    assert 0 < signals["profile"].latency_p50_ms < signals["profile"].latency_p99_ms < 100
    only = metrics.golden_signals(HOTEL, ["geo", "user"], window_s=30)
    assert list(only) == ["geo", "user"]
    assert metrics.firing_alerts() == []


def test_series_and_call_graph(lab: FakeLab) -> None:
    metrics = SimMetrics(lab.sim.store, now=lambda: lab.now)
    series = metrics.series(
        HOTEL, "search", "error_ratio", start=lab.now - timedelta(seconds=120), end=lab.now
    )
    values = [p.value for p in series[0].points]
    assert values[0] == 0.0 and values[-1] == pytest.approx(1.0)
    with pytest.raises(QueryError):
        metrics.series(HOTEL, "search", "saturation", start=lab.now, end=lab.now)
    graph = metrics.call_graph(HOTEL)
    assert ("search", "geo") in graph and ("loadgenerator", "frontend") in graph
    refused = metrics.query(
        "sum by (peer) (rate(http_client_requests_total"
        f'{{namespace="{HOTEL}",code="503"}}[1m])) > 0'
    )
    assert [s.labels["peer"] for s in refused] == ["geo"]


def test_exporter_serves_valid_exposition_text(lab: FakeLab) -> None:
    exporter = MetricsExporter(lab.sim.store)
    url = exporter.start()
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            text = response.read().decode()
    finally:
        exporter.stop()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in (
        "http_server_requests",
        "http_server_request_duration_seconds",
        "http_client_requests",
        "kube_pod_status_ready",
        "kube_pod_container_status_restarts",
        "kube_deployment_spec_replicas",
        "kube_deployment_status_replicas_available",
        "kube_pod_status_phase",
        "kube_pod_container_resource_limits",
        "container_cpu_usage_seconds",
        "container_memory_working_set_bytes",
    ):
        assert name in families, name
    assert families["http_server_request_duration_seconds"].type == "histogram"
    codes = {
        s.labels["code"]
        for s in families["http_client_requests"].samples
        if s.labels["peer"] == "geo"
    }
    assert {"200", "503"} <= codes
