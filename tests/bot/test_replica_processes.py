"""Two `stratus run` processes on one lab cluster, one Slack workspace and one PostgreSQL
database, with the real Prometheus scraping the lab and the real Alertmanager posting to the
follower's webhook, through a full incident: each singleton job ran in one process only
(`stratus_singleton_runs_total` on each `/metrics`), no Slack message was posted twice, and
each digest once.

The lab runs in real time (Prometheus stamps samples with the wall clock), so this test takes
a couple of minutes: detection, diagnosis, an Approve click in the workspace, a transaction
with a 20 s validation window, and a digest on the next minute.
"""

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
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bot.ids import ActionId, MessageKind
from lab.alerts.stack import AlertingStack, binaries, free_port, metrics_target
from lab.faults import fault
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import SlackWorkspace, WorkspaceConfig
from storage import Store
from tests.bot.scenario.harness import POLICY, buttons
from tests.conftest import require
from tests.storage.conftest import PostgresSchema, postgres_base_url

T = TypeVar("T")
HOTEL = "hotel-reservation"
TOKEN = "replica-test-webhook-token"
SINGLETONS = ("scan", "housekeeping", "pickup", "digest")

pytestmark = pytest.mark.timeout(900)


def wait(what: str, check: Callable[[], T | None], timeout_s: float) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.25)
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
    """One `stratus run` process, its log in a file (a pipe nobody reads could fill up)."""

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


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def test_two_stratus_run_processes_act_once(tmp_path: Path, stack: ExitStack) -> None:
    require(binaries() is not None, "prometheus and prometheus-alertmanager are not installed")
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
            kubeconfig=tmp_path / "kubeconfig",
            start=datetime.now(UTC).replace(microsecond=0),
        )
    ).start()
    stack.callback(world.stop)
    ws = SlackWorkspace(WorkspaceConfig(ack_timeout_s=15.0), clock=world.clock.time)
    ws.start()
    stack.callback(ws.stop)
    world.wait_healthy(timeout_s=600)
    assert world.metrics_url is not None
    ports = (free_port(), free_port())
    alerting = AlertingStack(
        home=tmp_path / "alerting",
        metrics_target=metrics_target(world.metrics_url),
        # Alertmanager posts to the second process, which will be the follower.
        webhook_url=f"http://127.0.0.1:{ports[1]}/alerts/alertmanager",
        webhook_token=TOKEN,
    )
    alerting.start()
    stack.callback(alerting.stop)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.format(ttl="30m") + "  sustain: 20s\n")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(
        SLACK_BOT_TOKEN=ws.config.bot_token,
        SLACK_APP_TOKEN=ws.config.app_token,
        SLACK_API_URL=ws.api_url,
        STRATUS_SETTINGS_FILE="",
        STRATUS_HTTP_HOST="127.0.0.1",
        STRATUS_DATABASE_URL=schema.url,
        KUBECONFIG=str(tmp_path / "kubeconfig"),
        STRATUS_CLUSTER_NAME="lab",
        STRATUS_NAMESPACES=HOTEL,
        STRATUS_POLICY_FILE=str(policy),
        STRATUS_PROMETHEUS_URL=alerting.prometheus_url,
        STRATUS_SCAN_INTERVAL_S="10",
        STRATUS_WEBHOOK_TOKEN=TOKEN,
        STRATUS_DIGEST_SCHEDULES="incidents=* * * * *",
        STRATUS_LEADER_LEASE_S="6",
        STRATUS_LEADER_RENEW_DEADLINE_S="4",
        STRATUS_LEADER_RETRY_S="1",
        NO_PROXY="127.0.0.1,localhost",
    )
    # The first process migrates the database and leads; the second follows.
    a = Replica(env, ports[0], tmp_path / "a.log")
    stack.callback(a.stop)
    first = wait("the first process to lead", lambda: leader_of(a.url), 90)
    assert first["leading"] is True, a.tail()
    b = Replica(env, ports[1], tmp_path / "b.log")
    stack.callback(b.stop)
    second = wait("the second process to answer", lambda: leader_of(b.url), 90)
    assert second["leading"] is False and second["holder"] == first["identity"], second
    ws.wait_until(lambda: ws.socket_connections == 2, timeout=30)

    store = Store.connect(schema.url)
    stack.callback(store.close)
    fault("wrong-target-port").inject(world, app=HOTEL)
    incident = wait("an incident", store.incidents.list_open, 240)[0]

    def plan_message() -> tuple[str, str] | None:
        rows = store.slack_messages.find(incident_id=incident.id, kind=MessageKind.PLAN.value)
        if not rows:
            return None
        message = ws.message(rows[-1].channel, rows[-1].ts)
        if message is None or ActionId.APPROVE not in buttons(message):
            return None
        return rows[-1].channel, rows[-1].ts

    channel, plan_ts = wait("the plan with Approve", plan_message, 240)
    ws.click("alice", channel, plan_ts, ActionId.APPROVE)
    wait(
        "the incident to close",
        lambda: store.incidents.get(incident.id).state in ("closed", "escalated"),
        300,
    )
    assert store.incidents.get(incident.id).state == "closed", a.tail() + b.tail()
    [tx] = store.transactions.list_for_incident(incident.id)
    assert tx.status == "committed"
    assert (tx.holder or "").startswith(first["identity"]), (tx.holder, first)
    wait("a digest", lambda: store.audit.query(verb="digest"), 90)

    # Every singleton job ran in the leading process only.
    ran_a, ran_b = singleton_runs(a.url), singleton_runs(b.url)
    for job in SINGLETONS:
        assert ran_a.get(job, 0) > 0, (job, ran_a)
        assert ran_b.get(job, 0) == 0, (job, ran_b)
    # The follower took Alertmanager's notifications; the leader opened the incident.
    assert b'stratus_alertmanager_webhooks_total{status="200"}' in (get(f"{b.url}/metrics") or b"")

    # Slack shows each message once: every message Stratus posted in the incident's channel
    # is one the store recorded under one (kind, ref), plus the evidence and the chart, each
    # uploaded once; each digest window was posted once.
    rows = store.slack_messages.find(incident_id=incident.id)
    keys = Counter((r.kind, r.ref, r.channel) for r in rows)
    assert max(keys.values()) == 1, keys
    recorded = {r.ts for r in rows}
    mine = [m for m in ws.messages(channel) if m.get("bot_id")]
    assert all(m["ts"] in recorded for m in mine if not m.get("files")), mine
    files = Counter(f["name"] for m in mine for f in m.get("files", []))
    assert set(files.values()) == {1}, files
    windows = [str(r.detail["end"]) for r in store.audit.query(verb="digest")]
    assert len(windows) == len(set(windows)), windows

    # SIGKILL the leader: the follower takes the Lease once it has seen no renewal for a
    # lease (6 s) — give it two retries and a loaded machine's scheduling on top — and
    # starts the singleton work.
    a.process.kill()
    a.process.wait(10)
    killed = time.monotonic()
    wait("the second process to lead", lambda: (leader_of(b.url) or {}).get("leading"), 30)
    took = time.monotonic() - killed
    assert took <= 6 + 2 * 1 + 3, took
    wait("the new leader's scan", lambda: singleton_runs(b.url).get("scan", 0) > 0, 30)
