"""Signal profiles against the real Prometheus: one running lab, its traffic exported in every
convention at once (one exporter per convention on the same store), and one Prometheus per
convention, so `auto` sees only that convention's names, as on a real cluster. Under each
built-in profile (given, and found by `auto`) `PrometheusMetrics` must read the same golden
signals and call graph as the lab profile reads from the lab's own names; a custom profile file
reads metrics Prometheus renamed at scrape time; a profile without an error query makes every
measurement unknown, never healthy, and doctor says so."""

from __future__ import annotations

import subprocess
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.adapters.prometheus_metrics import PrometheusMetrics
from agents.adapters.signal_profiles import LAB, PROFILES, SignalProfile, load_profile
from agents.errors import MetricsError
from agents.model import GoldenSignals, Scope
from agents.severity import UNKNOWN_SIGNALS, SeverityMeter
from agents.tnr.engine import verdict
from bot.doctor import CheckStatus, check_signals
from lab.sim.conventions import CONVENTIONS
from lab.sim.exporter import MetricsExporter
from lab.sim.world import LabWorld, WorldConfig
from tests.conftest import require_binary
from tests.integration.conftest import APP, _start, _stop, free_port, http_json, wait_until

WINDOW_S = 30
#: Relabelling at scrape time gives every lab metric and label another name: what a team with
#: its own instrumentation has, read through a profile file.
ACME_RELABEL: list[dict[str, Any]] = [
    {"source_labels": ["__name__"], "regex": "http_server_requests_total",
     "target_label": "__name__", "replacement": "acme_served_total"},
    {"source_labels": ["__name__"],
     "regex": "http_server_request_duration_seconds_(bucket|sum|count)",
     "target_label": "__name__", "replacement": "acme_latency_seconds_${1}"},
    {"source_labels": ["__name__"], "regex": "http_client_requests_total",
     "target_label": "__name__", "replacement": "acme_calls_total"},
    {"source_labels": ["__name__"], "regex": "acme_.*", "action": "keep"},
    {"source_labels": ["namespace"], "target_label": "kube_ns"},
    {"source_labels": ["service"], "target_label": "app"},
    {"source_labels": ["peer"], "target_label": "callee"},
    {"source_labels": ["code"], "target_label": "status"},
    {"regex": "namespace|service|peer|code", "action": "labeldrop"},
]  # fmt: skip
ACME_PROFILE = """\
name: acme
identify: [acme_served_total]
service_label: app
request_rate: sum by (app) (rate(acme_served_total{kube_ns="$namespace"}[$window]))
error_rate: sum by (app) (rate(acme_served_total{kube_ns="$namespace",status=~"5.."}[$window]))
latency_p50: >-
  histogram_quantile(0.5, sum by (app, le)
  (rate(acme_latency_seconds_bucket{kube_ns="$namespace"}[$window])))
latency_p99: >-
  histogram_quantile(0.99, sum by (app, le)
  (rate(acme_latency_seconds_bucket{kube_ns="$namespace"}[$window])))
latency_unit: s
call_graph: sum by (app, callee) (increase(acme_calls_total{kube_ns="$namespace"}[$window]))
peer_label: callee
"""


@dataclass
class Conventions:
    world: LabWorld
    prometheus: dict[str, str]  # convention → its own Prometheus's URL
    kubeconfig: Path


def _scrape(job: str, url: str, relabel: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "job_name": job,
        "honor_labels": True,
        "static_configs": [{"targets": [urllib.parse.urlsplit(url).netloc]}],
    }
    if relabel:
        config["metric_relabel_configs"] = relabel
    return config


@pytest.fixture(scope="module")
def conventions() -> Iterator[Conventions]:
    prometheus = require_binary("prometheus")
    procs: list[subprocess.Popen[bytes]] = []
    exporters: list[MetricsExporter] = []
    world: LabWorld | None = None
    with tempfile.TemporaryDirectory(prefix="stratus-signals-") as tmp:
        home = Path(tmp)
        try:
            world = LabWorld(
                WorldConfig(
                    apps=(APP,),
                    seed=0,
                    stepped=False,
                    speed=1.0,
                    serve_api=True,
                    kubeconfig=home / "kubeconfig",
                    scrape_interval_s=1.0,
                )
            ).start()
            urls: dict[str, str] = {}
            for convention in CONVENTIONS:
                exporter = MetricsExporter(world.sim.store, signals=convention)
                exporters.append(exporter)
                exporter.start()
                port = free_port()
                jobs = [_scrape(convention, exporter.url)]
                if convention == "lab":
                    jobs.append(_scrape("acme", exporter.url, ACME_RELABEL))
                config = home / f"{convention}.yml"
                config.write_text(
                    yaml.safe_dump({"global": {"scrape_interval": "1s"}, "scrape_configs": jobs})
                )
                procs.append(
                    _start(
                        [
                            prometheus,
                            f"--config.file={config}",
                            f"--storage.tsdb.path={home / convention}",
                            f"--web.listen-address=127.0.0.1:{port}",
                        ],
                        home / f"{convention}.log",
                    )
                )
                urls[convention] = f"http://127.0.0.1:{port}"
            world.wait_healthy(timeout_s=120)
            for convention, url in urls.items():
                wait_until(
                    lambda url=url: http_json(f"{url}/api/v1/query?query=up")["data"]["result"],
                    timeout_s=45,
                    what=f"the {convention} Prometheus's first scrape",
                )
            assert world.config.kubeconfig is not None
            yield Conventions(world=world, prometheus=urls, kubeconfig=world.config.kubeconfig)
        finally:
            for proc in procs:
                _stop(proc)
            for exporter in exporters:
                exporter.stop()
            if world is not None:
                world.stop()


def _close(a: float, b: float, *, rel: float, floor: float) -> bool:
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), floor)


def _agree(
    ours: dict[str, GoldenSignals], theirs: dict[str, GoldenSignals]
) -> dict[str, GoldenSignals] | None:
    """`ours` when it reads what the lab profile reads, within scrape-timing noise."""
    busy = {name for name, s in theirs.items() if s.request_rate >= 1.0}
    if not busy or not busy <= set(ours):
        return None
    for name in busy:
        a, b = ours[name], theirs[name]
        if not (
            _close(a.request_rate, b.request_rate, rel=0.15, floor=0.5)
            and _close(a.error_ratio, b.error_ratio, rel=0.2, floor=0.02)
            and _close(a.latency_p50_ms, b.latency_p50_ms, rel=0.15, floor=1.0)
            and _close(a.latency_p99_ms, b.latency_p99_ms, rel=0.2, floor=2.0)
        ):
            return None
    return ours


def _same_reading(
    conventions: Conventions, url: str, profile: SignalProfile | str
) -> tuple[PrometheusMetrics, dict[str, GoldenSignals]]:
    lab = PrometheusMetrics(conventions.prometheus["lab"], profile=LAB)
    metrics = PrometheusMetrics(url, profile=profile, rediscover_s=0)  # type: ignore[arg-type]
    try:
        signals = wait_until(
            lambda: _agree(
                dict(metrics.golden_signals(APP, window_s=WINDOW_S)),
                dict(lab.golden_signals(APP, window_s=WINDOW_S)),
            ),
            timeout_s=45,
            what=f"{profile if isinstance(profile, str) else profile.name} to read what lab reads",
        )
        return metrics, signals
    finally:
        lab.close()


def _lab_edges(conventions: Conventions) -> set[tuple[str, str]]:
    lab = PrometheusMetrics(conventions.prometheus["lab"], profile=LAB)
    try:
        return set(lab.call_graph(APP, window_s=60))
    finally:
        lab.close()


@pytest.mark.parametrize("name", [c for c in CONVENTIONS if c != "lab"])
@pytest.mark.parametrize("how", ["given", "auto"])
def test_each_profile_reads_what_the_lab_profile_reads(
    conventions: Conventions, name: str, how: str
) -> None:
    url = conventions.prometheus[name]
    metrics, signals = _same_reading(conventions, url, PROFILES[name] if how == "given" else "auto")
    try:
        assert metrics.profile() is PROFILES[name]
        assert "frontend" in signals and signals["frontend"].latency_p50_ms > 0
        # Charts convert the profile's unit too (a ms histogram read as s is 1000× off).
        now = datetime.now(UTC)
        [chart] = metrics.series(
            APP, "frontend", "latency_p99_ms", start=now - timedelta(seconds=20), end=now
        )
        charted = max(p.value for p in chart.points)
        assert 1 / 3 < charted / signals["frontend"].latency_p99_ms < 3
        if PROFILES[name].call_graph is None:
            with pytest.raises(MetricsError, match=f"signal profile {name} cannot read call_graph"):
                metrics.call_graph(APP)
            return
        lab_edges = _lab_edges(conventions)
        assert ("frontend", "search") in lab_edges
        edges = wait_until(
            lambda: (e := set(metrics.call_graph(APP, window_s=60))) >= lab_edges and e,
            timeout_s=20,
            what=f"the {name} call graph",
        )
        assert edges == lab_edges
    finally:
        metrics.close()


def test_a_profile_file_reads_metrics_renamed_at_scrape_time(
    conventions: Conventions, tmp_path: Path
) -> None:
    path = tmp_path / "acme.yaml"
    path.write_text(ACME_PROFILE)
    acme = load_profile(path)
    metrics, _ = _same_reading(conventions, conventions.prometheus["lab"], acme)
    try:
        assert set(metrics.call_graph(APP, window_s=60)) == _lab_edges(conventions)
        # The series come from the relabelled job only: the profile reads no lab names.
        assert {s.labels["job"] for s in metrics.query("acme_served_total")} == {"acme"}
    finally:
        metrics.close()


def test_a_profile_without_errors_is_unknown_never_healthy(conventions: Conventions) -> None:
    blind = replace(LAB, name="no-errors", error_rate=None)
    metrics = PrometheusMetrics(conventions.prometheus["lab"], profile=blind)
    cluster = KubernetesCluster.connect(kubeconfig=conventions.kubeconfig, cluster_name="lab")
    try:
        with pytest.raises(MetricsError, match="signal profile no-errors cannot read error_rate"):
            metrics.golden_signals(APP)
        # What a validation measures: the severity is incomplete, so it cannot commit.
        severity = SeverityMeter(reader=cluster, metrics=metrics).measure(
            Scope(cluster="lab", namespace=APP)
        )
        assert UNKNOWN_SIGNALS in severity.unknown
        decision = verdict(
            mu_before=3.0,
            mu_after=severity.mu,
            mu0=3.0,
            require_progress=True,
            unknown=severity.unknown,
        )
        assert not decision.commit and not decision.healthy
        checks = {c.name: c for c in check_signals(metrics, [APP])}
        assert checks["signal error_rate"].verdict is CheckStatus.PROBLEM
        assert "no-errors cannot read it" in checks["signal error_rate"].detail
        assert "STRATUS_SIGNAL_PROFILE" in checks["signal error_rate"].fix
        assert checks["signal request_rate"].verdict is CheckStatus.OK
    finally:
        cluster.close()
        metrics.close()


def test_doctor_names_the_profile_auto_found_and_what_it_reads(conventions: Conventions) -> None:
    metrics = PrometheusMetrics(conventions.prometheus["ingress-nginx"])
    try:
        checks = {c.name: c for c in check_signals(metrics, [APP])}
    finally:
        metrics.close()
    assert checks["signal profile"].verdict is CheckStatus.OK
    assert checks["signal profile"].detail.startswith("auto found ingress-nginx")
    assert checks["signal request_rate"].verdict is CheckStatus.OK
    assert checks["signal latency_p99"].verdict is CheckStatus.OK
    assert checks["signal call_graph"].verdict is CheckStatus.SKIPPED
    other = PrometheusMetrics(conventions.prometheus["istio"], profile=PROFILES["linkerd"])
    try:
        wrong = {c.name: c for c in check_signals(other, [APP])}
    finally:
        other.close()
    # A profile whose metrics are not there is refused outright: its queries would read the
    # namespace as idle, and idle as healthy.
    assert wrong["signal profile"].verdict is CheckStatus.PROBLEM
    assert "has no response_latency_ms_bucket, response_total" in wrong["signal profile"].detail
    again = PrometheusMetrics(conventions.prometheus["istio"], profile=PROFILES["linkerd"])
    try:
        with pytest.raises(MetricsError, match=r"signal profile linkerd: Prometheus at .* has no"):
            again.golden_signals(APP)
    finally:
        again.close()
