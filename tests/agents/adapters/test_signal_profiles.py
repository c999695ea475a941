"""Signal profiles without a Prometheus: the lab profile's queries are exactly the old
defaults, detection picks the right convention, profile files are refused with file, line and
field, `auto` keeps asking a Prometheus that had nothing to match, the lab exports millisecond
buckets for the meshes, and the names agree across the settings, the lab and the CLI."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest

from agents.adapters.prometheus_metrics import PrometheusMetrics
from agents.adapters.signal_profiles import (
    BUILT_IN,
    CHOICES,
    LAB,
    PROFILES,
    LatencyUnit,
    detect,
    load_profile,
    render,
)
from agents.errors import MetricsError, SignalProfileError
from bot.cli.lab_commands import up
from bot.config import SettingsError, load_settings
from bot.services import signal_profile
from lab.sim.conventions import CONVENTIONS
from lab.sim.exporter import render as render_metrics
from lab.sim.metrics import MetricStore, labels


def test_the_lab_profile_sends_the_queries_it_always_sent() -> None:
    def q(signal: str) -> str:
        template = LAB.template(signal)
        assert template is not None
        return render(template, namespace="hotel", window_s=60)

    assert q("request_rate") == (
        'sum by (service) (rate(http_server_requests_total{namespace="hotel"}[60s]))'
    )
    assert q("error_rate") == (
        'sum by (service) (rate(http_server_requests_total{namespace="hotel",code=~"5.."}[60s]))'
    )
    assert q("latency_p50") == (
        "histogram_quantile(0.5, sum by (service, le) (rate("
        'http_server_request_duration_seconds_bucket{namespace="hotel"}[60s])))'
    )
    assert q("latency_p99") == (
        "histogram_quantile(0.99, sum by (service, le) (rate("
        'http_server_request_duration_seconds_bucket{namespace="hotel"}[60s])))'
    )
    assert q("call_graph") == (
        'sum by (service, peer) (increase(http_client_requests_total{namespace="hotel"}[60s]))'
    )
    assert LAB.call_graph_labels == ("service", "peer")
    with pytest.raises(ValueError, match="unknown signal 'name'"):
        LAB.template("name")  # a field that is no query is not read as one


def test_render_fills_only_its_own_placeholders() -> None:
    query = 'label_replace(x{ns="$namespace"}[$window], "a", "$1", "b", "(.*)")'
    assert render(query, namespace="n", window_s=5) == (
        'label_replace(x{ns="n"}[5s], "a", "$1", "b", "(.*)")'
    )


def test_detect_picks_the_convention_whose_metrics_exist() -> None:
    assert detect(["up", "istio_requests_total", "http_server_requests_total"]) is PROFILES["istio"]
    # The lab exports the OTel histogram's name too: its own counter makes it the lab.
    lab = ["http_server_requests_total", "http_server_request_duration_seconds_count"]
    assert detect(lab) is LAB
    assert detect(["http_server_request_duration_seconds_count"]) is PROFILES["otel"]
    assert detect(["response_total"]) is None  # Linkerd needs its latency histogram too
    assert detect(["response_total", "response_latency_ms_bucket"]) is PROFILES["linkerd"]
    assert detect(["up", "process_cpu_seconds_total"]) is None
    assert {p.name for p in BUILT_IN} == set(CHOICES) - {"auto"}
    assert PROFILES["istio"].latency_unit is LatencyUnit.MILLISECONDS
    assert PROFILES["ingress-nginx"].missing == ("call_graph",)


GOOD = """\
name: acme
identify: [acme_served_total]
service_label: app
request_rate: sum by (app) (rate(acme_served_total{ns="$namespace"}[$window]))
latency_unit: ms
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: acme\n  service_label: [\n", r":2: \(yaml\): "),
        (GOOD + "error_rte: x\n", r":6: error_rte: unknown field \(known: name, identify, "),
        (GOOD.replace("ms\n", "minutes\n"), r":5: latency_unit: Input should be 's' or 'ms'"),
        (GOOD.replace("$window", "$windw"), r":4: request_rate: unknown placeholder \$windw"),
        (GOOD.replace("service_label: app\n", ""), r":1: service_label: Field required"),
        (GOOD + "call_graph: sum(x)\n", r":6: peer_label: a call_graph query needs"),
        ("- a list\n", r":1: \(top level\): expected a mapping"),
    ],
)
def test_a_bad_profile_file_names_file_line_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    with pytest.raises(SignalProfileError, match=re.escape(str(path)) + message):
        load_profile(path)


def test_a_profile_file_reads_and_lacks_what_it_says(tmp_path: Path) -> None:
    path = tmp_path / "profile.yaml"
    path.write_text(GOOD)
    profile = load_profile(path)
    assert profile.name == "acme" and profile.latency_unit is LatencyUnit.MILLISECONDS
    assert profile.missing == ("error_rate", "latency_p50", "latency_p99", "call_graph")
    with pytest.raises(SignalProfileError, match="cannot read the signal profile"):
        load_profile(tmp_path / "nowhere.yaml")


def test_settings_choose_the_profile_and_a_bad_file_names_the_setting(tmp_path: Path) -> None:
    assert signal_profile(load_settings({})) == "auto"
    chosen = load_settings({"STRATUS_SIGNAL_PROFILE": "Linkerd"})
    assert signal_profile(chosen) is PROFILES["linkerd"]
    path = tmp_path / "profile.yaml"
    path.write_text(GOOD + "bogus: 1\n")
    both = load_settings(
        {"STRATUS_SIGNAL_PROFILE": "istio", "STRATUS_SIGNAL_PROFILE_FILE": str(path)}
    )
    with pytest.raises(
        SettingsError, match=r"STRATUS_SIGNAL_PROFILE_FILE: .*profile.yaml:6: bogus"
    ):
        signal_profile(both)
    path.write_text(GOOD)
    file_profile = signal_profile(both)  # the file wins over the name
    assert not isinstance(file_profile, str) and file_profile.name == "acme"


@contextmanager
def names_server(answers: list[list[str]]) -> Iterator[tuple[str, list[str]]]:
    """A PromQL API that lists `answers[i]` as metric names on its i-th call (the last one
    from then on), and returns no series to queries."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            if self.path.startswith("/api/v1/label/__name__/values"):
                data: object = answers[min(len(seen) - 1, len(answers) - 1)]
            else:
                data = {"resultType": "vector", "result": []}
            body = json.dumps({"status": "success", "data": data}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_auto_fails_closed_until_it_finds_a_profile_and_asks_again_later() -> None:
    with names_server([["up"], ["up", "istio_requests_total"]]) as (url, seen):
        patient = PrometheusMetrics(url, rediscover_s=3600)
        eager = PrometheusMetrics(url, rediscover_s=0)
        try:
            with pytest.raises(MetricsError, match=r"none of the 1 metric names .* matches"):
                patient.golden_signals("hotel")
            # Not asked again before rediscover_s: the same reason, no request.
            with pytest.raises(MetricsError, match="none of the 1 metric names"):
                patient.golden_signals("hotel")
            assert len(seen) == 1
            assert eager.profile() is PROFILES["istio"]  # the second answer
            assert eager.configured_profile == "auto"
            assert eager.golden_signals("hotel") == {}
        finally:
            patient.close()
            eager.close()
    gone = PrometheusMetrics(url, rediscover_s=0)  # the server has stopped
    try:
        with pytest.raises(MetricsError, match="auto: cannot list metric names"):
            gone.call_graph("hotel")
    finally:
        gone.close()


def test_auto_asks_again_within_seconds_while_a_new_prometheus_has_scraped_nothing() -> None:
    # The bot and Prometheus start together: the first listing has no application metric.
    with names_server([["up"], ["up", "istio_requests_total"]]) as (url, seen):
        metrics = PrometheusMetrics(url, rediscover_s=3600)
        try:
            with pytest.raises(MetricsError, match="none of the 1 metric names"):
                metrics.profile()
            time.sleep(1.2)  # the first pause is 1 s, not rediscover_s
            assert metrics.profile() is PROFILES["istio"]
            assert len(seen) == 2
        finally:
            metrics.close()


def test_the_meshes_get_millisecond_buckets_and_their_own_labels() -> None:
    store = MetricStore()
    geo = labels(namespace="hotel", service="geo")
    with store.lock:
        store.live[("http_server_request_duration_seconds_bucket", (*geo, ("le", "0.0025")))] = 4.0
        store.live[("http_server_request_duration_seconds_sum", geo)] = 0.5
        store.live[("http_server_requests_total", labels(code="503", **dict(geo)))] = 2.0
    istio = render_metrics(store, "istio")
    assert (
        'istio_request_duration_milliseconds_bucket{destination_service_name="geo",'
        'destination_workload="geo",destination_workload_namespace="hotel",le="2.5",'
        'reporter="destination"} 4'
    ) in istio
    assert re.search(r"istio_request_duration_milliseconds_sum\{[^}]*\} 500\n", istio)
    assert 'response_code="503"' in istio and "http_server" not in istio
    linkerd = render_metrics(store, "linkerd")
    assert 'response_latency_ms_bucket{deployment="geo",direction="inbound",le="2.5"' in linkerd
    assert 'classification="failure"' in linkerd
    otel = render_metrics(store, "otel")
    bucket = 'http_server_request_duration_seconds_bucket{k8s_namespace_name="hotel",le="0.0025"'
    assert bucket in otel
    assert "# TYPE http_server_request_duration_seconds histogram" in otel


def test_the_lab_the_cli_and_the_settings_name_the_same_conventions() -> None:
    choices = next(p for p in up.params if p.name == "signals").type
    assert set(CONVENTIONS) == set(PROFILES) == set(choices.choices)  # type: ignore[attr-defined]


def test_the_readme_example_is_a_valid_profile(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    section = readme.split("### Signal profiles", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "acme.yaml"
    path.write_text(example)
    profile = load_profile(path)
    assert profile.name == "acme" and profile.missing == ()
    assert profile.call_graph_labels == ("app", "callee")
