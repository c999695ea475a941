"""A stepped lab on the fake cluster: the simulator's unit tests drive it second by second."""

from __future__ import annotations

from datetime import datetime, timedelta

from lab.apps import load_app
from lab.clock import LAB_EPOCH
from lab.sim.simulator import Simulator
from lab.sim.snapshot import AppSnapshot
from tests.lab.sim.fakecluster import FakeCluster, Obj


class FakeLab:
    def __init__(self, *apps: str, seed: int = 0) -> None:
        bundles = [load_app(a) for a in apps]
        self.sim = Simulator(models=[b.model for b in bundles], seed=seed)
        self.cluster = FakeCluster(self.sim.runtime)
        self.sim.attach(self.cluster, version=lambda: self.cluster._rv)
        for bundle in bundles:
            self.cluster.apply(list(bundle.manifests))
        self.now: datetime = LAB_EPOCH

    def step(self, seconds: int) -> None:
        for _ in range(seconds):
            self.now += timedelta(seconds=1)
            self.cluster.reconcile(self.now)
            self.sim.tick(self.now)

    def snap(self, namespace: str) -> AppSnapshot:
        return self.sim.snapshot(namespace)

    def pods(self, namespace: str, workload: str) -> list[Obj]:
        return [
            o
            for (k, ns, _), o in sorted(self.cluster.objects.items())
            if k == "Pod" and ns == namespace and o["metadata"].get("owner") == workload
        ]

    def logs(self, namespace: str, workload: str) -> list[str]:
        out: list[str] = []
        for name, lines in sorted(self.cluster.logs.items()):
            if name.startswith(f"{workload}-"):
                out.extend(lines)
        return out
