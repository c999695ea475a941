"""Two clusters, one Slack app, one database: a Stratus deployment per cluster (each its own
lab world, kubeconfig, Alertmanager and leader Lease, `STRATUS_CLUSTER_NAME` east and west)
shares the workspace and PostgreSQL. The same fault in both at once opens two incidents, each
naming its cluster. A click may reach either deployment (Slack hands it to any of the app's
connections): east's approval goes through west's Stratus, which records it and leaves the
incident to east; west's is a click in the workspace. Each incident is mitigated by its own
cluster's Stratus, in its own cluster only; an Undo of west's change that reaches east's
Stratus is passed on to west's and run there."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from agents.model import IncidentState
from bot.config import load_settings
from bot.ids import ActionId, MessageKind
from bot.runtime import BotRuntime
from bot.services import build_services
from lab.alerts import attach_alerts
from lab.faults import fault
from lab.sim.world import LabWorld, WorldConfig
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import (
    HOTEL,
    ROUTE,
    SPEED,
    AlertForwarder,
    BotLab,
    buttons,
    text_of,
)
from tests.storage.conftest import PostgresSchema, postgres_base_url

S = IncidentState


@dataclass
class West:
    world: LabWorld
    runtime: BotRuntime


@pytest.fixture
def database() -> Iterator[str]:
    schema = PostgresSchema(postgres_base_url())
    try:
        yield schema.url
    finally:
        schema.drop()


def start_west(lab: BotLab, tmp: Path) -> Iterator[West]:
    """A second cluster and its own Stratus, on the first one's workspace and database."""
    world = LabWorld(
        WorldConfig(
            apps=(HOTEL,),
            seed=6,
            stepped=False,
            speed=SPEED,
            serve_api=True,
            kubeconfig=tmp / "west-kubeconfig",
        )
    )
    forwarder = AlertForwarder()
    runtime: BotRuntime | None = None
    try:
        world.start()
        world.wait_healthy()
        alerts = attach_alerts(world, webhook=forwarder, route=ROUTE)
        values = dict(lab.values, KUBECONFIG=str(tmp / "west-kubeconfig"))
        values["STRATUS_CLUSTER_NAME"] = "west"
        options = replace(
            lab.options, clock=world.clock, metrics_source=alerts.metrics, holder="west-1"
        )
        runtime = BotRuntime(build_services(load_settings(values), options))
        runtime.start()
        forwarder.url = runtime.webhook_url
        journal = runtime.services.store.journal
        lab.wait("west's journal", lambda: journal.query("west", HOTEL, kind="Service"))
        yield West(world=world, runtime=runtime)
    finally:
        if runtime is not None:
            runtime.stop()
        forwarder.stop()
        world.stop()


def geo_spec(world: LabWorld) -> dict[str, Any]:
    service = world.api.get("Service", HOTEL, "geo")
    assert service is not None
    spec: dict[str, Any] = service["spec"]
    return spec


def test_two_clusters_two_incidents_each_mitigated_in_its_own_cluster(
    database: str, make_lab: MakeLab, tmp_path: Path
) -> None:
    east = make_lab(
        holder="east-1",
        settings={"STRATUS_DATABASE_URL": database, "STRATUS_CLUSTER_NAME": "east"},
    )
    west_context = start_west(east, tmp_path)
    west = next(west_context)
    try:
        ws, store = east.ws, east.services.store
        ws.wait_until(lambda: ws.socket_connections == 2, timeout=10)
        # Each deployment leads its own cluster (a Lease in each).
        assert east.services.leads() and west.runtime.services.leads()
        worlds = {"east": east.world, "west": west.world}
        machines = {
            "east": east.services.brain.machine,
            "west": west.runtime.services.brain.machine,
        }
        original = {name: geo_spec(w) for name, w in worlds.items()}

        for w in worlds.values():
            fault("wrong-target-port").inject(w, app=HOTEL)
        broken = {name: geo_spec(w) for name, w in worlds.items()}
        assert all(broken[n] != original[n] for n in worlds)

        def both() -> dict[str, str] | None:
            rows = store.incidents.list_by_state(*[s.value for s in S])
            found = {r.cluster: r.id for r in rows}
            return found if set(found) == {"east", "west"} and len(rows) == 2 else None

        incidents = east.wait("an incident in each cluster", both, timeout=90)
        for cluster, incident_id in incidents.items():
            machine = machines[cluster]
            east.wait(
                f"{incident_id} awaiting approval",
                lambda m=machine, i=incident_id: m.incident(i).state is S.AWAITING_APPROVAL,
                timeout=120,
            )
            opened = east.wait_message(incident_id, MessageKind.OPENED)
            assert f"on `{cluster}`" in text_of(opened), text_of(opened)
            home, _ = east.message_ref(incident_id, MessageKind.SUMMARY) or ("", "")
            assert f"-{cluster}-" in ws.channel(home)["name"], ws.channel(home)
            east.wait_message(
                incident_id, MessageKind.PLAN, predicate=lambda m: ActionId.APPROVE in buttons(m)
            )

        # East's plan is approved through west's Stratus (what its listener does when Slack
        # hands it the click: one app, any connection): west records the decision and leaves
        # the incident to east. West's plan is approved with a click in the workspace.
        [east_plan] = [p for p in machines["east"].plans(incidents["east"]) if p.rank == 0]
        channel, _ = east.message_ref(incidents["east"], MessageKind.PLAN) or ("", "")
        west.runtime.services.incidents.approve(
            plan_id=east_plan.id,
            content_hash=east_plan.content_hash,
            user="U0ALICE01",
            channel=channel,
        )
        channel, plan_ts = east.message_ref(incidents["west"], MessageKind.PLAN) or ("", "")
        ws.click("alice", channel, plan_ts, ActionId.APPROVE)
        for cluster, incident_id in incidents.items():
            machine = machines[cluster]
            east.wait(
                f"{incident_id} closed",
                lambda m=machine, i=incident_id: m.incident(i).state in (S.CLOSED, S.ESCALATED),
                timeout=180,
            )
            assert machine.incident(incident_id).state is S.CLOSED
            [tx] = machine.transactions(incident_id)
            assert tx.status.value == "committed"
            assert tx.scope.cluster == cluster and tx.holder.startswith(f"{cluster}-1"), tx
        # Each cluster's Service is back as it was; nothing crossed over.
        for name, w in worlds.items():
            assert geo_spec(w) == original[name], name

        # An Undo of west's change that Slack hands to east's Stratus: east cannot write
        # west's cluster, so it passes the request on through the database; west's leader
        # runs it in west (alice approved the change, so she may undo it), and east's
        # cluster is untouched.
        [west_tx] = machines["west"].transactions(incidents["west"])
        west_channel, _ = east.message_ref(incidents["west"], MessageKind.PLAN) or ("", "")
        east.services.incidents.undo(
            transaction_id=west_tx.id, user="U0ALICE01", channel=west_channel, view_id=None
        )
        ledger = machines["west"].engine.ledger
        east.wait(
            "west's change undone by west",
            lambda: ledger.transaction(west_tx.id).status.value == "undone",
            timeout=60,
        )
        assert geo_spec(west.world) == broken["west"]
        assert geo_spec(east.world) == original["east"]
        east.wait("the request done", lambda: store.undo_requests.take("west") == [], timeout=10)
        told = [m["text"] for m in ws.ephemerals(west_channel, "alice")]
        assert any("passed the Undo on to `west`" in t for t in told), told
        # A request for a transaction nobody knows is dropped, not retried for ever.
        store.undo_requests.put(
            cluster="west",
            transaction_id="tx-unknown",
            user="U0ALICE01",
            channel=west_channel,
            view_id=None,
            confirm_drift=False,
            via="east",
        )
        east.wait("the unknown request dropped", lambda: not store.undo_requests.take("west"))
    finally:
        next(west_context, None)
