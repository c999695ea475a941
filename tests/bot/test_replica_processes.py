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

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from bot.ids import ActionId, MessageKind
from lab.alerts.stack import binaries, free_port
from lab.faults import fault
from storage import Store
from tests.bot.replicas import (
    HOTEL,
    LEASE_S,
    RETRY_S,
    get,
    leader_of,
    replica_lab,
    singleton_runs,
    wait,
)
from tests.bot.scenario.harness import buttons
from tests.conftest import require

SINGLETONS = ("scan", "housekeeping", "pickup", "digest")

pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def test_two_stratus_run_processes_act_once(tmp_path: Path, stack: ExitStack) -> None:
    require(binaries() is not None, "prometheus and prometheus-alertmanager are not installed")
    ports = (free_port(), free_port())
    # Alertmanager posts to the second process, which will be the follower.
    lab = replica_lab(
        tmp_path,
        stack,
        webhook_port=ports[1],
        extra={"STRATUS_DIGEST_SCHEDULES": "incidents=* * * * *"},
    )
    world, ws = lab.world, lab.ws
    # The first process migrates the database and leads; the second follows.
    a = lab.replica("a", ports[0])
    first = wait("the first process to lead", lambda: leader_of(a.url), 90)
    assert first["leading"] is True, a.tail()
    b = lab.replica("b", ports[1])
    second = wait("the second process to answer", lambda: leader_of(b.url), 90)
    assert second["leading"] is False and second["holder"] == first["identity"], second
    ws.wait_until(lambda: ws.socket_connections == 2, timeout=30)

    store = Store.connect(lab.schema.url)
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
    assert took <= LEASE_S + 2 * RETRY_S + 3, took
    wait("the new leader's scan", lambda: singleton_runs(b.url).get("scan", 0) > 0, 30)
