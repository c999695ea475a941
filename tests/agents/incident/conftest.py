"""The whole loop headless on the lab: lab world + in-process alerts + the official client +
SQLite + `build_brain` (the same wiring the bot and the bench use) + the headless driver."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.incident.headless import Approver, HeadlessLoop, auto_approve
from agents.model import Incident
from agents.policy import Policy, build_policy
from agents.tnr import TnrLimits
from agents.wiring import Brain, build_brain
from lab.alerts import attach_alerts
from lab.sim.world import LabWorld, WorldConfig
from storage import Store
from storage.migrations import upgrade

HOTEL = "hotel-reservation"
SHOP = "online-shop"
LIMITS = TnrLimits(sustain_s=60, poll_s=5, settle_min_s=5, settle_timeout_s=180, lock_ttl_s=30)


def autonomous(namespace: str) -> Policy:
    return build_policy({"defaults": {"autonomy": "autonomous", "attempts": 4}})


@dataclass
class Loop:
    world: LabWorld
    brain: Brain
    loop: HeadlessLoop
    store: Store

    def incidents(self) -> list[Incident]:
        return self.loop.incidents()

    def run_until_ended(self, *, timeout_s: float = 900.0) -> Incident:
        def ended() -> bool:
            found = self.incidents()
            return bool(found) and all(self.loop.ended(i.id) for i in found)

        assert self.loop.run(until=ended, timeout_s=timeout_s, step_s=5.0), [
            (i.id, i.state) for i in self.incidents()
        ]
        [incident] = self.incidents()
        return incident

    def timeline(self, incident_id: str) -> list[tuple[str, str]]:
        return [(e.state, e.message) for e in self.store.incidents.timeline(incident_id)]


MakeLoop = Callable[..., Loop]


@pytest.fixture
def make_loop(tmp_path: Path) -> Iterator[MakeLoop]:
    opened: list[tuple[LabWorld, KubernetesCluster, Store]] = []

    def make(
        app: str = HOTEL,
        *,
        approver: Approver = auto_approve,
        policy: Policy | None = None,
        seed: int = 5,
    ) -> Loop:
        config = WorldConfig(
            apps=(app,), seed=seed, serve_api=True, kubeconfig=tmp_path / f"{app}.kubeconfig"
        )
        world = LabWorld(config).start()
        world.wait_healthy()
        alerts = attach_alerts(world)
        assert config.kubeconfig is not None
        cluster = KubernetesCluster.connect(kubeconfig=config.kubeconfig, cluster_name="lab")
        url = f"sqlite:///{tmp_path / f'{app}.db'}"
        upgrade(url)
        store = Store.connect(url)
        opened.append((world, cluster, store))
        brain = build_brain(
            store=store,
            reader=cluster,
            writer=cluster,
            metrics=alerts.metrics,
            clock=world.clock,
            namespaces=[app],
            policy=policy or autonomous(app),
            limits=LIMITS,
        )
        loop = HeadlessLoop(
            machine=brain.machine,
            detector=brain.detector,
            clock=world.clock,
            reader=cluster,
            metrics=alerts.metrics,
            scanner=brain.scanner,
            journal=brain.journal,
            approver=approver,
            namespaces=[app],
        )
        loop.step()  # the change journal's baseline, before anything breaks
        return Loop(world=world, brain=brain, loop=loop, store=store)

    yield make
    for world, cluster, store in opened:
        cluster.close()
        store.close()
        world.stop()
