"""SimMetrics under every built-in signal profile: over the same simulated traffic, each reads
the golden signals, the call graph and the charts the lab profile reads (milliseconds and
seconds alike), because the view of the store in its convention holds what a Prometheus
scraping the exporter would; a signal a profile lacks is refused, never zero."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from agents.adapters.signal_profiles import PROFILES, LatencyUnit
from agents.errors import MetricsError
from bot.cli.bench import SIGNAL_CHOICES
from lab.sim.convention_view import ConventionView
from lab.sim.conventions import CONVENTIONS
from lab.sim.source import SimMetrics
from tests.lab.sim.harness import FakeLab

HOTEL = "hotel-reservation"
OTHERS = [c for c in CONVENTIONS if c != "lab"]


@pytest.fixture(scope="module")
def lab() -> FakeLab:
    """Healthy traffic, then geo's Service pointed at a dead port: search fails (5xx) while
    the rest serve, so error ratios, latencies and the call graph all carry something."""
    lab = FakeLab(HOTEL)
    lab.step(90)
    lab.cluster.mutate(
        "Service", HOTEL, "geo", lambda s: s["spec"]["ports"][0].__setitem__("targetPort", 9999)
    )
    lab.step(60)
    return lab


def _metrics(lab: FakeLab, signals: str = "lab") -> SimMetrics:
    return SimMetrics(lab.sim.store, now=lambda: lab.now, signals=signals)


@pytest.mark.parametrize("signals", OTHERS)
def test_every_profile_reads_the_golden_signals_the_lab_profile_reads(
    lab: FakeLab, signals: str
) -> None:
    expected = _metrics(lab).golden_signals(HOTEL, window_s=30)
    assert expected["search"].error_ratio == pytest.approx(1.0)  # the traffic says something
    got = _metrics(lab, signals).golden_signals(HOTEL, window_s=30)
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        have = got[name]
        assert have.request_rate == pytest.approx(want.request_rate, rel=1e-9), name
        assert have.error_ratio == pytest.approx(want.error_ratio, rel=1e-9, abs=1e-12), name
        # Istio and Linkerd histograms are in ms (bounds rounded to 6 digits): same quantile.
        assert have.latency_p50_ms == pytest.approx(want.latency_p50_ms, rel=1e-6), name
        assert have.latency_p99_ms == pytest.approx(want.latency_p99_ms, rel=1e-6), name


@pytest.mark.parametrize("signals", OTHERS)
def test_every_profile_charts_what_the_lab_profile_charts(lab: FakeLab, signals: str) -> None:
    window = {"start": lab.now - timedelta(seconds=100), "end": lab.now}
    for chart in ("request_rate", "error_ratio", "latency_p99_ms"):
        [want] = _metrics(lab).series(HOTEL, "search", chart, **window)
        [have] = _metrics(lab, signals).series(HOTEL, "search", chart, **window)
        assert [p.at for p in have.points] == [p.at for p in want.points]
        assert [p.value for p in have.points] == pytest.approx(
            [p.value for p in want.points], rel=1e-6
        ), chart


@pytest.mark.parametrize("signals", OTHERS)
def test_every_profile_with_a_call_graph_reads_the_lab_profiles(lab: FakeLab, signals: str) -> None:
    expected = _metrics(lab).call_graph(HOTEL)
    assert ("search", "geo") in expected and ("loadgenerator", "frontend") in expected
    metrics = _metrics(lab, signals)
    if metrics.profile.call_graph is None:  # ingress-nginx sees no calls between services
        with pytest.raises(MetricsError, match=f"{signals} cannot read call_graph"):
            metrics.call_graph(HOTEL)
        return
    assert metrics.call_graph(HOTEL) == expected


def test_the_view_holds_what_the_exporter_would_serve(lab: FakeLab) -> None:
    store = lab.sim.store
    t = store.last_scrape()
    assert t is not None
    lab_sum = store.latest(
        ("http_server_request_duration_seconds_sum", (("namespace", HOTEL), ("service", "geo"))),
        t,
        300,
    )
    istio = ConventionView(store, "istio")
    [key] = [
        k
        for k in istio.keys("istio_request_duration_milliseconds_sum")
        if ("destination_workload", "geo") in k[1]
    ]
    assert lab_sum is not None and lab_sum > 0
    assert istio.latest(key, t, 300) == pytest.approx(lab_sum * 1000.0)  # seconds → ms
    # The OTel service graph has no status code: an edge is the sum over the caller's codes.
    calls = [
        v
        for k in store.keys("http_client_requests_total")
        if ("service", "search") in k[1] and ("peer", "geo") in k[1]
        if (v := store.latest(k, t, 300)) is not None
    ]
    otel = ConventionView(store, "otel")
    edge = ("traces_service_graph_request_total", (("client", "search"), ("server", "geo")))
    assert len(calls) > 1 and otel.latest(edge, t, 300) == pytest.approx(sum(calls))
    # What is not a request metric reads the same under every convention.
    names = otel.names()
    assert "kube_deployment_status_replicas_available" in names
    assert "http_server_requests_total" not in names and "istio_requests_total" not in names


def test_the_lab_profile_reads_the_store_itself(lab: FakeLab) -> None:
    metrics = _metrics(lab)
    assert metrics.profile is PROFILES["lab"]
    assert metrics.profile.latency_unit is LatencyUnit.SECONDS
    assert PROFILES["istio"].latency_unit is LatencyUnit.MILLISECONDS


def test_a_signal_the_profile_lacks_is_refused_never_zero(lab: FakeLab) -> None:
    blind = replace(PROFILES["istio"], name="istio-no-p99", latency_p99=None)
    metrics = SimMetrics(lab.sim.store, now=lambda: lab.now, signals="istio", profile=blind)
    with pytest.raises(MetricsError, match="istio-no-p99 cannot read latency_p99"):
        metrics.golden_signals(HOTEL)
    window = {"start": lab.now - timedelta(seconds=30), "end": lab.now}
    with pytest.raises(MetricsError, match="cannot read latency_p99"):
        metrics.series(HOTEL, "search", "latency_p99_ms", **window)
    # What the profile can read still answers.
    [rate] = metrics.series(HOTEL, "search", "request_rate", **window)
    assert rate.points and rate.points[-1].value > 0
    assert ("search", "geo") in metrics.call_graph(HOTEL)


def test_an_unknown_convention_is_refused(lab: FakeLab) -> None:
    with pytest.raises(ValueError, match="unknown convention 'datadog'"):
        _metrics(lab, "datadog")


def test_the_bench_offers_every_convention() -> None:
    assert SIGNAL_CHOICES == CONVENTIONS
    assert set(CONVENTIONS) == set(PROFILES)  # a convention reads with the profile of its name
