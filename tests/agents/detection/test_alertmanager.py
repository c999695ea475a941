"""Alertmanager webhook payloads: what a real Alertmanager 0.25 sends, and what is refused."""

from __future__ import annotations

import copy
import json
import queue
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agents.detection import PayloadError, parse_webhook, parse_webhook_body
from agents.detection.alertmanager import label_fingerprint
from agents.model import AlertStatus
from tests.conftest import require_binary

PAYLOAD: dict[str, Any] = {
    "receiver": "stratus",
    "status": "firing",
    "alerts": [
        {
            "status": "firing",
            "labels": {
                "alertname": "HighErrorRate",
                "namespace": "hotel",
                "service": "frontend",
                "severity": "critical",
            },
            "annotations": {"summary": "frontend 5xx above 5%"},
            "startsAt": "2026-01-05T09:00:03.739266876+01:00",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus:9090/graph?g0.expr=x",
            "fingerprint": "c6eadffa33fcdf37",
        },
        {
            "status": "resolved",
            "labels": {"alertname": "PodNotReady", "namespace": "hotel", "pod": "geo-1"},
            "annotations": {},
            "startsAt": "2026-01-05T07:58:00Z",
            "endsAt": "2026-01-05T08:01:00.5Z",
            "generatorURL": "",
            "fingerprint": "bc97ff14869b13e3",
        },
    ],
    "groupLabels": {"namespace": "hotel"},
    "commonLabels": {"namespace": "hotel"},
    "commonAnnotations": {},
    "externalURL": "http://alertmanager:9093",
    "version": "4",
    "groupKey": '{}:{namespace="hotel"}',
    "truncatedAlerts": 0,
}


def test_a_real_payload_becomes_alerts() -> None:
    message = parse_webhook(copy.deepcopy(PAYLOAD))
    assert (message.receiver, message.status, message.group_key) == (
        "stratus",
        AlertStatus.FIRING,
        '{}:{namespace="hotel"}',
    )
    assert message.group_labels == {"namespace": "hotel"}
    assert message.external_url == "http://alertmanager:9093"
    firing, resolved = message.alerts
    assert firing.fingerprint == "c6eadffa33fcdf37"
    assert (firing.name, firing.status, firing.severity) == (
        "HighErrorRate",
        AlertStatus.FIRING,
        "critical",
    )
    assert (firing.namespace, firing.service, firing.source) == (
        "hotel",
        "frontend",
        "alertmanager",
    )
    # Nanoseconds truncated, converted to UTC; Go's zero time means "not set".
    assert firing.starts_at == datetime(2026, 1, 5, 8, 0, 3, 739266, tzinfo=UTC)
    assert firing.ends_at is None
    assert resolved.status is AlertStatus.RESOLVED
    assert resolved.ends_at == datetime(2026, 1, 5, 8, 1, 0, 500000, tzinfo=UTC)
    assert resolved.annotations == {}


def test_body_bytes_and_unknown_fields_are_accepted() -> None:
    payload = copy.deepcopy(PAYLOAD)
    payload["orgId"] = 1  # a newer sender's extra field
    payload["alerts"][0]["silenceURL"] = "http://x"
    message = parse_webhook_body(json.dumps(payload).encode())
    assert len(message.alerts) == 2


def test_a_missing_fingerprint_is_derived_from_the_labels() -> None:
    payload = copy.deepcopy(PAYLOAD)
    del payload["alerts"][0]["fingerprint"]
    labels = payload["alerts"][0]["labels"]
    alert = parse_webhook(payload).alerts[0]
    assert alert.fingerprint == label_fingerprint(labels)
    assert len(alert.fingerprint) == 16
    assert label_fingerprint(dict(reversed(list(labels.items())))) == alert.fingerprint


def _broken(path: list[Any], value: Any) -> dict[str, Any]:
    payload = copy.deepcopy(PAYLOAD)
    target: Any = payload
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return payload


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["version"], "3", "version: unsupported version '3' (expected '4')"),
        (["version"], _DELETE, "version: is required"),
        (["version"], 4, "version: expected a string, got int"),
        (["alerts"], {}, "alerts: expected an array, got object"),
        (["alerts"], _DELETE, "alerts: is required"),
        (["status"], "pending", "status: expected 'firing' or 'resolved', got 'pending'"),
        (["truncatedAlerts"], -1, "truncatedAlerts: expected a count, got -1"),
        (["truncatedAlerts"], True, "truncatedAlerts: expected an integer, got boolean"),
        (["groupKey"], None, "groupKey: expected a string, got null"),
        (["commonLabels", "namespace"], 3, "commonLabels.namespace: expected a string, got int"),
        (["alerts", 1], "x", "alerts[1]: expected an object, got string"),
        (["alerts", 0, "labels"], _DELETE, "alerts[0].labels: is required"),
        (["alerts", 0, "labels"], [], "alerts[0].labels: expected an object of strings, got array"),
        (
            ["alerts", 0, "labels", "severity"],
            2,
            "alerts[0].labels.severity: expected a string, got int",
        ),
        (
            ["alerts", 1, "startsAt"],
            "yesterday",
            "alerts[1].startsAt: expected an RFC 3339 timestamp, got 'yesterday'",
        ),
        (
            ["alerts", 1, "startsAt"],
            "2026-01-05T09:00:00",
            "alerts[1].startsAt: timestamp '2026-01-05T09:00:00' has no time zone",
        ),
        (
            ["alerts", 0, "startsAt"],
            "0001-01-01T00:00:00Z",
            "alerts[0].startsAt: is the zero time; a started alert needs one",
        ),
        (
            ["alerts", 1, "endsAt"],
            "0001-01-01T00:00:00Z",
            "alerts[1].endsAt: a resolved alert needs its end time",
        ),
        (["alerts", 0, "fingerprint"], 12, "alerts[0].fingerprint: expected a string, got int"),
    ],
)
def test_malformed_payloads_name_the_field_and_the_problem(
    path: list[Any], value: Any, message: str
) -> None:
    with pytest.raises(PayloadError) as caught:
        parse_webhook(_broken(path, value))
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[]", "$: expected a JSON object, got array"),
        (b"{not json", "$: not valid JSON: "),
        (b"\xff\xfe", "$: not valid JSON: "),
        (b"[" * 100_000 + b"]" * 100_000, "$: nested 100000 levels deep"),
        (b'{"a":' * 50, "$: nested 50 levels deep"),
    ],
)
def test_bodies_that_are_not_objects(body: bytes, message: str) -> None:
    with pytest.raises(PayloadError, match=r"^\$: ") as caught:
        parse_webhook_body(body)
    assert str(caught.value).startswith(message)
    assert caught.value.path == "$"


@pytest.mark.parametrize(
    "when", ["9999-12-31T23:59:59-05:00", "9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z"]
)
def test_timestamps_outside_the_range_are_refused(when: str) -> None:
    payload = copy.deepcopy(PAYLOAD)
    payload["alerts"][0]["startsAt"] = when
    with pytest.raises(PayloadError, match=r"^alerts\[0\]\.startsAt: .* is outside 1970\.\.2999"):
        parse_webhook(payload)


# --------------------------------------------------------------------- the real Alertmanager


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class _Receiver(BaseHTTPRequestHandler):
    bodies: queue.Queue[bytes]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.bodies.put(self.rfile.read(length))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, queue.Queue[bytes]]]:
    bodies: queue.Queue[bytes] = queue.Queue()
    handler = type("Receiver", (_Receiver,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/alerts", bodies
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _post(url: str, body: Any) -> None:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


def test_what_a_real_alertmanager_sends_parses(
    tmp_path: Path, webhook: tuple[str, queue.Queue[bytes]]
) -> None:
    binary = require_binary("prometheus-alertmanager")
    url, bodies = webhook
    config = tmp_path / "alertmanager.yml"
    config.write_text(
        "route:\n"
        "  receiver: stratus\n"
        "  group_by: [namespace]\n"
        "  group_wait: 0s\n"
        "  group_interval: 1s\n"
        "  repeat_interval: 1h\n"
        "receivers:\n"
        "  - name: stratus\n"
        "    webhook_configs:\n"
        f"      - url: {url}\n"
        "        send_resolved: true\n"
    )
    port = _free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"{base}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        now = datetime.now(UTC)
        alert = {
            "labels": {
                "alertname": "HighErrorRate",
                "namespace": "hotel",
                "service": "frontend",
                "severity": "critical",
            },
            "annotations": {"summary": "frontend 5xx above 5%"},
            "startsAt": (now - timedelta(seconds=30)).isoformat(),
            "generatorURL": "http://prometheus:9090/graph",
        }
        _post(f"{base}/api/v2/alerts", [alert])
        firing = parse_webhook_body(bodies.get(timeout=30))
        assert firing.status is AlertStatus.FIRING
        assert firing.group_labels == {"namespace": "hotel"}
        assert firing.group_key.endswith('{namespace="hotel"}')
        (parsed,) = firing.alerts
        assert (parsed.name, parsed.status, parsed.ends_at) == (
            "HighErrorRate",
            AlertStatus.FIRING,
            None,
        )
        assert parsed.labels["service"] == "frontend"
        assert len(parsed.fingerprint) == 16

        _post(f"{base}/api/v2/alerts", [{**alert, "endsAt": now.isoformat()}])
        resolved = parse_webhook_body(bodies.get(timeout=30))
        (gone,) = resolved.alerts
        assert gone.status is AlertStatus.RESOLVED
        assert gone.fingerprint == parsed.fingerprint
        assert gone.ends_at is not None
    finally:
        process.terminate()
        process.wait(10)
