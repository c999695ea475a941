"""The engine on the lab: a stepped lab world served over HTTP, the official client through
`KubernetesCluster`, a migrated SQLite store and the simulator's metrics."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.model import ObjectRef, Scope
from agents.severity import SeverityMeter
from agents.tnr import TnrLimits, TransactionEngine, Undoer
from agents.tnr.ledger import StorageLedger
from lab.sim.world import LabWorld, WorldConfig
from storage import Store
from storage.migrations import upgrade

NS = "hotel-reservation"
SCOPE = Scope(cluster="lab", namespace=NS)
FAST = TnrLimits(
    sustain_s=30, poll_s=5, settle_min_s=5, settle_timeout_s=120, lock_ttl_s=30, deadline_s=600
)


def deployment(name: str, namespace: str = NS) -> ObjectRef:
    return ObjectRef(api_version="apps/v1", kind="Deployment", name=name, namespace=namespace)


def service(name: str, namespace: str = NS) -> ObjectRef:
    return ObjectRef(api_version="v1", kind="Service", name=name, namespace=namespace)


@dataclass
class Rig:
    world: LabWorld
    cluster: KubernetesCluster
    store: Store
    engine: TransactionEngine
    undoer: Undoer
    ledger: StorageLedger

    def engine_with(self, limits: TnrLimits, **kwargs: object) -> TransactionEngine:
        return TransactionEngine(
            reader=self.cluster,
            writer=self.cluster,
            meter=SeverityMeter(reader=self.cluster, metrics=self.world.metrics),
            ledger=self.ledger,
            clock=self.world.clock,
            holder="test-engine",
            limits=limits,
            **kwargs,  # type: ignore[arg-type]
        )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'stratus.db'}"
    upgrade(url)
    store = Store.connect(url)
    yield store
    store.close()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[LabWorld]:
    config = WorldConfig(
        apps=("hotel-reservation",), seed=3, serve_api=True, kubeconfig=tmp_path / "kubeconfig"
    )
    with LabWorld(config) as world:
        world.wait_healthy()
        yield world


@pytest.fixture
def rig(world: LabWorld, store: Store) -> Iterator[Rig]:
    assert world.config.kubeconfig is not None
    cluster = KubernetesCluster.connect(kubeconfig=world.config.kubeconfig, cluster_name="lab")
    ledger = StorageLedger(store)
    engine = TransactionEngine(
        reader=cluster,
        writer=cluster,
        meter=SeverityMeter(reader=cluster, metrics=world.metrics),
        ledger=ledger,
        clock=world.clock,
        holder="test-engine",
        limits=FAST,
    )
    yield Rig(
        world=world,
        cluster=cluster,
        store=store,
        engine=engine,
        undoer=Undoer(engine),
        ledger=ledger,
    )
    cluster.close()
