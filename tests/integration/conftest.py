"""The real alerting stack around a running lab, started once per test session.

A `LabWorld` in running mode at speed 1.0 serves `/metrics`; the real Prometheus (Debian's
2.42) scrapes it every second and evaluates the shipped rules file every second; the real
Alertmanager (0.25, no gossip port) groups by namespace with `group_wait: 1s` and posts to a
webhook receiver in the test process. Everything listens on 127.0.0.1; processes are stopped
and their storage deleted at the end, whatever happens.
"""

from __future__ import annotations

import json
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.alerts import LabAlerts, attach_alerts
from lab.alerts.promfile import RULES_FILE
from lab.sim.world import LabWorld, WorldConfig
from tests.conftest import require_binary
from tests.lab.alerts.receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
APP = "hotel-reservation"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def wait_until(check: Any, *, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError as e:  # not listening yet
            last = e
        if last and not isinstance(last, OSError):
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what} (last: {last!r})")


@dataclass
class Stack:
    world: LabWorld
    alerts: LabAlerts  # the same rules, evaluated in-process, for comparison
    receiver: Receiver
    prometheus_url: str
    alertmanager_url: str
    logs: Path

    def query(self, promql: str) -> list[dict[str, Any]]:
        url = f"{self.prometheus_url}/api/v1/query?query={urllib.parse.quote(promql)}"
        result: list[dict[str, Any]] = http_json(url)["data"]["result"]
        return result

    def tail(self) -> str:
        """The processes' logs, for a failure message."""
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.logs.glob("*.log"))
        )


def _ready(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=5) as response:
        return bool(response.status == 200)


def _start(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    out = log.open("wb")
    try:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        out.close()  # the child has its own copy of the descriptor


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="session")
def alerting_stack() -> Iterator[Stack]:
    prometheus = require_binary("prometheus")
    alertmanager = require_binary("prometheus-alertmanager")
    procs: list[subprocess.Popen[bytes]] = []
    world: LabWorld | None = None
    receiver = Receiver().start()
    with tempfile.TemporaryDirectory(prefix="stratus-alerting-") as tmp:
        home = Path(tmp)
        try:
            world = LabWorld(
                WorldConfig(
                    apps=(APP,),
                    seed=0,
                    stepped=False,
                    speed=1.0,
                    serve_metrics=True,
                    scrape_interval_s=1.0,  # kube-state gauges refreshed every lab second
                )
            ).start()
            assert world.metrics_url is not None
            alerts = attach_alerts(world)

            am_port = free_port()
            (home / "alertmanager.yml").write_text(
                yaml.safe_dump(
                    {
                        "route": {
                            "receiver": "stratus",
                            "group_by": ["namespace"],
                            "group_wait": "1s",
                            "group_interval": "1s",
                            "repeat_interval": "1h",
                        },
                        "receivers": [
                            {
                                "name": "stratus",
                                "webhook_configs": [{"url": receiver.url, "send_resolved": True}],
                            }
                        ],
                    }
                )
            )
            procs.append(
                _start(
                    [
                        alertmanager,
                        f"--config.file={home / 'alertmanager.yml'}",
                        f"--storage.path={home / 'am-data'}",
                        f"--web.listen-address=127.0.0.1:{am_port}",
                        "--cluster.listen-address=",
                        f"--web.external-url=http://127.0.0.1:{am_port}",
                    ],
                    home / "alertmanager.log",
                )
            )

            prom_port = free_port()
            target = urllib.parse.urlsplit(world.metrics_url).netloc
            (home / "prometheus.yml").write_text(
                yaml.safe_dump(
                    {
                        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                        "rule_files": [str(ROOT / RULES_FILE)],
                        "alerting": {
                            "alertmanagers": [
                                {"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}
                            ]
                        },
                        "scrape_configs": [
                            {
                                "job_name": "stratus-lab",
                                "honor_labels": True,
                                "static_configs": [{"targets": [target]}],
                            }
                        ],
                    }
                )
            )
            procs.append(
                _start(
                    [
                        prometheus,
                        f"--config.file={home / 'prometheus.yml'}",
                        f"--storage.tsdb.path={home / 'prom-data'}",
                        f"--web.listen-address=127.0.0.1:{prom_port}",
                    ],
                    home / "prometheus.log",
                )
            )
            stack = Stack(
                world=world,
                alerts=alerts,
                receiver=receiver,
                prometheus_url=f"http://127.0.0.1:{prom_port}",
                alertmanager_url=f"http://127.0.0.1:{am_port}",
                logs=home,
            )
            world.wait_healthy(timeout_s=120)
            wait_until(
                lambda: _ready(f"{stack.alertmanager_url}/-/ready"),
                timeout_s=30,
                what="Alertmanager to be ready",
            )
            wait_until(
                lambda: stack.query('http_server_requests_total{namespace="hotel-reservation"}'),
                timeout_s=45,
                what="Prometheus's first scrape of the lab",
            )
            yield stack
        finally:
            for proc in procs:
                _stop(proc)
            receiver.stop()
            if world is not None:
                world.stop()
