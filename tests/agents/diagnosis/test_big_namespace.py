"""A failing app among 2,000 other pods of its namespace is diagnosed and planned for as it is
alone (issue 21: selection, not truncation).

The lab serves the API over HTTP and the real adapter (`KubernetesCluster`) reads it, as the
bot does. The crowd is a Deployment of 2,000 healthy replicas whose name sorts first, so its
pods and their events come first in the server's name order: a list cut after a few pages
(the diagnosis kept 300 pods, the adapter five pages of events, the scan 1,000 pods) holds
none of the failing app's. Both runs inject the same fault into the same seeded world (the
crowd is the only difference) and must name the same root cause and propose the same plans.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.detection.scan import Scanner
from agents.diagnosis import Diagnoser
from agents.journal import ChangeJournal
from agents.model import AlertStatus, Incident, IncidentId, IncidentState, Scope
from agents.planning import RulePlanner
from lab.faults import fault
from lab.sim.world import LabWorld, WorldConfig
from storage import Store
from storage.migrations import upgrade

pytestmark = pytest.mark.slow

APP = "hotel-reservation"
CROWD = 2000
#: 110 pods per lab node: enough nodes for the crowd in both runs (the node list is evidence
#: too, so the small run has the same nodes).
NODES = 22


def _crowd(replicas: int) -> dict[str, Any]:
    """A Deployment of healthy replicas named to sort before every pod of the app. They run
    the frontend binary with a label of their own, so the simulator starts them as a workload
    no Service fronts: they serve no traffic and share nothing with the app but the namespace."""
    labels = {"io.kompose.service": "aaa-crowd"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "aaa-crowd", "namespace": APP, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "crowd",
                            "image": "ghcr.io/lab/hotel/hotelreservation:1.0",
                            "command": ["frontend"],
                        }
                    ]
                },
            },
        },
    }


@dataclass(frozen=True)
class Outcome:
    root_cause: tuple[str | None, str]
    plans: list[str]
    alerts: list[tuple[str, str | None]]
    crowd_pods: int


def _run(tmp_path: Path, *, crowd: int, fault_id: str) -> Outcome:
    url = f"sqlite:///{tmp_path / 'stratus.db'}"
    upgrade(url)
    store = Store.connect(url)
    kubeconfig = tmp_path / "kubeconfig"
    config = WorldConfig(apps=(APP,), seed=3, nodes=NODES, serve_api=True, kubeconfig=kubeconfig)
    try:
        with LabWorld(config) as world:
            if crowd:
                world.cluster.apply_manifests([_crowd(crowd)], field_manager="helm")
            world.wait_healthy(timeout_s=600)
            cluster = KubernetesCluster.connect(kubeconfig=kubeconfig, cluster_name="lab")
            try:
                return _diagnose_and_plan(world, cluster, store, fault_id)
            finally:
                cluster.close()
    finally:
        store.close()


def _diagnose_and_plan(
    world: LabWorld, cluster: KubernetesCluster, store: Store, fault_id: str
) -> Outcome:
    scope = Scope(cluster="lab", namespace=APP)
    journal = ChangeJournal(store=store, clock=world.clock, cluster="lab", namespaces=[APP])
    journal.sync(cluster)
    world.advance(30)
    fault(fault_id).inject(world, app=APP)
    scanner = Scanner(reader=cluster, metrics=world.metrics, clock=world.clock, namespaces=[APP])
    alerts = []
    for _ in range(24):
        world.advance(5)
        journal.sync(cluster)
        alerts = [a for a in scanner.scan() if a.status is AlertStatus.FIRING]
        if alerts:
            break
    assert alerts, "the scan raised nothing"
    now = world.clock.now()
    incident = Incident(
        id=IncidentId("inc-big"),
        title=fault_id,
        scope=scope,
        state=IncidentState.PLANNING,
        mu0=1.0,
        opened_at=min(a.starts_at for a in alerts),
        updated_at=now,
        service=alerts[0].service,
    )
    diagnosis = Diagnoser(
        cluster=cluster, clock=world.clock, metrics=world.metrics, journal=journal
    ).diagnose(incident, alerts)
    proposal = RulePlanner(cluster, journal).plan(incident, diagnosis, [], now=now)
    top = diagnosis.hypotheses[0]
    crowd_pods = len(cluster.pods(APP, label_selector="io.kompose.service=aaa-crowd"))
    return Outcome(
        root_cause=(top.service, str(top.category)),
        plans=["; ".join(a.describe() for a in c.actions) for c in proposal.candidates],
        alerts=sorted((a.name, a.service) for a in alerts),
        crowd_pods=crowd_pods,
    )


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    small, big = tmp_path / "small", tmp_path / "big"
    small.mkdir()
    big.mkdir()
    yield small, big


def test_a_crashing_app_among_2000_pods_is_diagnosed_as_alone(
    dirs: tuple[Path, Path],
) -> None:
    small_dir, big_dir = dirs
    small = _run(small_dir, crowd=0, fault_id="crashing-image")
    big = _run(big_dir, crowd=CROWD, fault_id="crashing-image")
    assert big.crowd_pods == CROWD  # the crowd is really there, and listed whole
    assert small.crowd_pods == 0
    assert small.plans, "the small namespace gets a plan"
    assert big.alerts == small.alerts
    assert big.root_cause == small.root_cause
    assert big.plans == small.plans
