"""Two replicas of the production bot on one lab cluster, one Slack workspace and one
PostgreSQL database, elected through the cluster's Lease (`agents.leadership`).

Each replica is `build_services` + `BotRuntime` as `stratus run` builds them, in this process
(the lab's clock is shared, so the incident runs at lab speed); each has its own holder
identity, Socket Mode connection, webhook and metrics. What is asserted is what an operator
would check on two pods: who leads (`/readyz`, `stratus_leader`), that every singleton job ran
on one replica only (`stratus_singleton_runs`), that an alert sent to the follower reaches the
leader through the inbox, that Slack shows each message once and each digest once, and that
the follower takes over when the leader goes silent without releasing its lease.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

import pytest

from agents.model import IncidentState
from bot.config import load_settings
from bot.ids import ActionId, MessageKind
from bot.runtime import BotRuntime
from bot.services import build_services
from lab.faults import fault
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL, BotLab, buttons
from tests.storage.conftest import PostgresSchema, postgres_base_url

S = IncidentState
#: Short lease timings so that a takeover happens in seconds (wall time: the elector runs on
#: the process's monotonic clock, not the lab's).
LEASE = {
    "STRATUS_LEADER_LEASE_S": "4",
    "STRATUS_LEADER_RENEW_DEADLINE_S": "3",
    "STRATUS_LEADER_RETRY_S": "0.5",
}
DIGEST_CHANNEL = "incidents"


@pytest.fixture
def database() -> Iterator[str]:
    schema = PostgresSchema(postgres_base_url())
    try:
        yield schema.url
    finally:
        schema.drop()


def second_replica(lab: BotLab, holder: str) -> BotRuntime:
    runtime = BotRuntime(
        build_services(load_settings(lab.values), replace(lab.options, holder=holder))
    )
    runtime.start()
    return runtime


def readyz(runtime: BotRuntime) -> dict[str, object]:
    with urllib.request.urlopen(f"{runtime.http_url}/readyz", timeout=10) as response:
        answer: dict[str, object] = json.loads(response.read())
    return answer


def runs(runtime: BotRuntime) -> dict[str, float]:
    """`stratus_singleton_runs` of one replica, by job."""
    found: dict[str, float] = {}
    for family in runtime.services.metrics.singleton_runs.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                found[sample.labels["job"]] = sample.value
    return found


def digests(lab: BotLab) -> list[str]:
    """The end of every digest window posted (one audit record per post)."""
    rows = lab.services.store.audit.query(verb="digest")
    return [str(r.detail["end"]) for r in rows]


def test_two_replicas_act_once_and_the_follower_takes_over(
    database: str, make_lab: MakeLab
) -> None:
    lab = make_lab(
        holder="replica-a",
        settings={
            "STRATUS_DATABASE_URL": database,
            "STRATUS_DIGEST_SCHEDULES": f"{DIGEST_CHANNEL}=* * * * *",
            **LEASE,
        },
    )
    a = lab.runtime
    b = second_replica(lab, "replica-b")
    try:
        lab.ws.wait_until(lambda: lab.ws.socket_connections == 2, timeout=10)
        # Both serve; one leads, and both say which.
        ready_a, ready_b = readyz(a), readyz(b)
        assert ready_a["ready"] is True and ready_b["ready"] is True
        assert ready_a["leader"] == {
            "identity": "replica-a",
            "leading": True,
            "holder": "replica-a",
            "token": 0,
        }
        assert ready_b["leader"] == {
            "identity": "replica-b",
            "leading": False,
            "holder": "replica-a",
            "token": None,
        }
        assert b"stratus_leader 0.0" in b.services.metrics.exposition()

        # Alertmanager reaches the follower: it queues the alerts, the leader opens the
        # incident.
        lab.forwarder.url = b.webhook_url
        fault("wrong-target-port").inject(lab.world, app=HOTEL)
        incident = lab.incident()
        # The follower took the webhook; the leader opened the incident from the inbox.
        assert (
            b'stratus_alertmanager_webhooks_total{status="200"}' in b.services.metrics.exposition()
        )
        assert b"stratus_incidents_opened_total{" not in b.services.metrics.exposition()
        assert b'stratus_incidents_opened_total{source="alertmanager"} 1.0' in (
            a.services.metrics.exposition()
        )
        # The leader drains the inbox; a repeated notification may land just before it does.
        drained = time.monotonic() + 30
        while b.services.store.inbox.count("lab") and time.monotonic() < drained:
            time.sleep(0.2)
        assert b.services.store.inbox.count("lab") == 0
        lab.wait_state(incident.id, S.AWAITING_APPROVAL, timeout=120)
        message = lab.wait_message(
            incident.id, MessageKind.PLAN, predicate=lambda m: ActionId.APPROVE in buttons(m)
        )
        channel, plan_ts = lab.message_ref(incident.id, MessageKind.PLAN) or ("", "")
        assert message["ts"] == plan_ts

        # Alice's Approve reaches the follower (what its Bolt listener calls on a click): it
        # records the decision; the leader's pickup executes the plan.
        [plan] = [p for p in lab.services.brain.machine.plans(incident.id) if p.rank == 0]
        b.services.incidents.approve(
            plan_id=plan.id, content_hash=plan.content_hash, user="U0ALICE01", channel=channel
        )
        lab.wait_state(incident.id, S.CLOSED, S.ESCALATED, timeout=180)
        assert lab.state(incident.id) is S.CLOSED
        [tx] = lab.services.brain.machine.transactions(incident.id)
        assert tx.status.value == "committed"
        # Wait for a digest (one a minute), then check that it was posted once.
        lab.wait("a digest", lambda: digests(lab), timeout=90)
        assert a.services.wait_idle(30) and b.services.wait_idle(30)

        approved = b'stratus_approvals_total{verdict="approved"} 1.0'
        assert approved in b.services.metrics.exposition()
        assert approved not in a.services.metrics.exposition()
        assert tx.holder.startswith("replica-a"), tx.holder  # the leader ran the transaction

        # Every singleton job ran on the leader and none on the follower.
        ran_a, ran_b = runs(a), runs(b)
        assert ran_a.get("housekeeping", 0) > 0 and ran_a.get("pickup", 0) > 0, ran_a
        assert ran_a.get("digest", 0) >= 1, ran_a
        assert sum(ran_b.values()) == 0, ran_b

        # Slack shows each message once: every message Stratus posted in the incident's
        # channel is one the store recorded, under one (kind, ref).
        rows = lab.services.store.slack_messages.find(incident_id=incident.id)
        keys = Counter((r.kind, r.ref, r.channel) for r in rows)
        assert max(keys.values()) == 1, keys
        recorded = {r.ts for r in rows}
        mine = [m for m in lab.ws.messages(channel) if m.get("bot_id")]
        assert all(m["ts"] in recorded for m in mine if not m.get("files")), mine
        # The rest are the evidence and the chart, each uploaded once.
        files = Counter(f["name"] for m in mine for f in m.get("files", []))
        assert set(files) == {f"{incident.id}-evidence.txt", f"{incident.id}-signals.png"}
        assert set(files.values()) == {1}, files
        windows = digests(lab)
        assert len(windows) == len(set(windows)), windows

        # The leader goes silent (its process is gone: the lease is not released). The
        # follower takes over within the lease, then leads everything.
        assert a.services.leader is not None and b.services.leader is not None
        silenced = time.monotonic()
        a.services.leader.halt()  # no more renewals, and no release
        lab.wait("replica-b to lead", b.services.leads, timeout=15)
        took = time.monotonic() - silenced
        assert took <= 4 + 2 * 0.5 + 1, took
        before = runs(a)
        lab.wait("replica-b's pickup passes", lambda: runs(b).get("pickup", 0) >= 3, timeout=10)
        # The old leader's scheduler still fires, but its fence refuses every pass.
        assert runs(a) == before
        assert readyz(b)["leader"] == {
            "identity": "replica-b",
            "leading": True,
            "holder": "replica-b",
            "token": 1,
        }
    finally:
        b.stop()
