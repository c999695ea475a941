"""`stratus run` replica processes against one lab, one Slack workspace and one PostgreSQL
database, for the tests and the benchmark of running more than one replica: the real lab
cluster (API and metrics served), the real Prometheus and Alertmanager, and each replica a
real process whose log goes to a file (a pipe nobody reads could fill up)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from lab.alerts.stack import AlertingStack, free_port, metrics_target
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import SlackWorkspace, WorkspaceConfig
from tests.bot.scenario.harness import POLICY
from tests.storage.conftest import PostgresSchema, postgres_base_url

T = TypeVar("T")
HOTEL = "hotel-reservation"
TOKEN = "replica-test-webhook-token"
#: The replicas' leader Lease: short, so that a takeover takes seconds.
LEASE_S, RENEW_DEADLINE_S, RETRY_S = 6.0, 4.0, 1.0
#: STRATUS_SCAN_INTERVAL_S: the issue's bound on a takeover is the lease plus one scan.
SCAN_INTERVAL_S = 10


def wait(what: str, check: Callable[[], T | None], timeout_s: float, step_s: float = 0.25) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(step_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body: bytes = response.read()
            return body
    except urllib.error.HTTPError as e:
        return bytes(e.read())
    except OSError:
        return None


def leader_of(url: str) -> dict[str, Any] | None:
    """What a replica's `/readyz` says of the leadership (None while it does not answer)."""
    body = get(f"{url}/readyz")
    if not body:
        return None
    answer: dict[str, Any] = json.loads(body)
    return answer.get("leader")


def singleton_runs(url: str) -> dict[str, float]:
    text = (get(f"{url}/metrics") or b"").decode()
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(r'stratus_singleton_runs_total\{job="([^"]+)"\} (\S+)', text)
    }


class Replica:
    """One `stratus run` process, its log in a file."""

    def __init__(self, env: dict[str, str], port: int, log: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from bot.cli.run import run; run()"],
                env={**env, "STRATUS_HTTP_PORT": str(port)},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def leading(self) -> bool:
        return self.process.poll() is None and bool((leader_of(self.url) or {}).get("leading"))

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, the Lease and the writer lease are left to expire."""
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def tail(self) -> str:
        return self.log.read_text()[-4000:] if self.log.exists() else ""


@dataclass
class ReplicaLab:
    """The lab, the workspace, the alerting stack and the database the replicas share."""

    world: LabWorld
    ws: SlackWorkspace
    alerting: AlertingStack
    schema: PostgresSchema
    env: dict[str, str]
    tmp: Path
    stack: ExitStack

    def replica(self, name: str, port: int | None = None) -> Replica:
        replica = Replica(self.env, port or free_port(), self.tmp / f"{name}.log")
        self.stack.callback(replica.stop)
        return replica


def replica_lab(
    tmp: Path,
    stack: ExitStack,
    *,
    webhook_port: int,
    sustain: str = "20s",
    extra: dict[str, str] | None = None,
) -> ReplicaLab:
    """Start the shared parts; Alertmanager posts to the replica that will listen on
    `webhook_port`. Everything started is stopped by `stack`."""
    schema = PostgresSchema(postgres_base_url())
    stack.callback(schema.drop)
    world = LabWorld(
        WorldConfig(
            apps=(HOTEL,),
            seed=5,
            stepped=False,
            speed=1.0,
            serve_api=True,
            serve_metrics=True,
            scrape_interval_s=1.0,
            kubeconfig=tmp / "kubeconfig",
            start=datetime.now(UTC).replace(microsecond=0),
        )
    ).start()
    stack.callback(world.stop)
    ws = SlackWorkspace(WorkspaceConfig(ack_timeout_s=15.0), clock=world.clock.time)
    ws.start()
    stack.callback(ws.stop)
    world.wait_healthy(timeout_s=600)
    assert world.metrics_url is not None
    alerting = AlertingStack(
        home=tmp / "alerting",
        metrics_target=metrics_target(world.metrics_url),
        webhook_url=f"http://127.0.0.1:{webhook_port}/alerts/alertmanager",
        webhook_token=TOKEN,
    )
    alerting.start()
    stack.callback(alerting.stop)
    policy = tmp / "policy.yaml"
    policy.write_text(POLICY.format(ttl="30m") + f"  sustain: {sustain}\n")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(
        SLACK_BOT_TOKEN=ws.config.bot_token,
        SLACK_APP_TOKEN=ws.config.app_token,
        SLACK_API_URL=ws.api_url,
        STRATUS_SETTINGS_FILE="",
        STRATUS_HTTP_HOST="127.0.0.1",
        STRATUS_DATABASE_URL=schema.url,
        KUBECONFIG=str(tmp / "kubeconfig"),
        STRATUS_CLUSTER_NAME="lab",
        STRATUS_NAMESPACES=HOTEL,
        STRATUS_POLICY_FILE=str(policy),
        STRATUS_PROMETHEUS_URL=alerting.prometheus_url,
        STRATUS_SCAN_INTERVAL_S=str(SCAN_INTERVAL_S),
        STRATUS_WEBHOOK_TOKEN=TOKEN,
        STRATUS_LEADER_LEASE_S=f"{LEASE_S:g}",
        STRATUS_LEADER_RENEW_DEADLINE_S=f"{RENEW_DEADLINE_S:g}",
        STRATUS_LEADER_RETRY_S=f"{RETRY_S:g}",
        NO_PROXY="127.0.0.1,localhost",
    )
    env.update(extra or {})
    return ReplicaLab(
        world=world, ws=ws, alerting=alerting, schema=schema, env=env, tmp=tmp, stack=stack
    )
