"""The journal's watch threads against the lab's emulated API server, through the official
client (`KubernetesCluster`): real watches, real managedFields, a real deployment
controller writing status and revision annotations the journal must not mistake for changes."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.journal import ChangeJournal, JournalWatcher
from agents.model import Change, ChangeType, KubeObject, ObjectRef, Scope
from agents.redact import REDACTED
from lab.clock import LabClock
from lab.kube.cluster import LabCluster
from storage import Store

HOTEL = Scope(cluster="lab", namespace="hotel")
DEPLOYMENT = ObjectRef(api_version="apps/v1", kind="Deployment", name="geo", namespace="hotel")
CONFIG = ObjectRef(api_version="v1", kind="ConfigMap", name="geo-config", namespace="hotel")

MANIFESTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hotel"}},
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "geo-config", "namespace": "hotel"},
        "data": {"DB_HOST": "mongodb-geo", "DB_PASSWORD": "hunter2"},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "geo", "namespace": "hotel"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "geo"}},
            "template": {
                "metadata": {"labels": {"app": "geo"}},
                "spec": {"containers": [{"name": "geo", "image": "hotel/geo:1.0"}]},
            },
        },
    },
]


def eventually(check: Callable[[], Any], what: str, timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[LabCluster, KubernetesCluster]]:
    cluster = LabCluster(clock=LabClock(speed=1.0), seed=11)
    cluster.serve()
    cluster.start()
    kube = KubernetesCluster.connect(
        kubeconfig=cluster.write_kubeconfig(tmp_path / "kubeconfig"), cluster_name="lab"
    )
    try:
        cluster.apply_manifests(MANIFESTS, field_manager="helm")
        yield cluster, kube
    finally:
        kube.close()
        cluster.stop()


def test_watching_the_lab_cluster(lab: tuple[LabCluster, KubernetesCluster], store: Store) -> None:
    cluster, kube = lab
    journal = ChangeJournal(store=store, clock=cluster.clock, cluster="lab", namespaces=["hotel"])
    watcher = JournalWatcher(journal=journal, watcher=kube, timeout_s=2)
    watcher.start()
    try:
        eventually(
            lambda: (
                {r.kind for r in store.journal.query("lab", "hotel")} >= {"Deployment", "ConfigMap"}
            ),
            "the baselines",
        )
        # Someone sets a broken image and edits the config.
        live = kube.get(DEPLOYMENT).body
        body = copy.deepcopy(live)
        body["spec"]["template"]["spec"]["containers"][0]["image"] = "hotel/geo:2.0-broken"
        kube.replace(KubeObject(body), field_manager="kubectl-set")
        config = copy.deepcopy(kube.get(CONFIG).body)
        config["data"]["DB_HOST"] = "mongodb-geo-typo"
        kube.replace(KubeObject(config), field_manager="kubectl-edit")

        def both() -> list[Change] | None:
            changes = journal.changes(HOTEL, None, None)
            return changes if {c.kind for c in changes} == {"Deployment", "ConfigMap"} else None

        changes = eventually(both, "both changes")
        # Let the deployment controller roll out (status, revision annotation, ReplicaSets).
        time.sleep(1.5)
    finally:
        assert watcher.stop(timeout_s=10)

    changes = journal.changes(HOTEL, None, None)
    by_kind = {c.kind: c for c in changes}
    assert len(changes) == 2, [c.summary() for c in changes]
    deployment = by_kind["Deployment"]
    assert (deployment.manager, deployment.change_type) == ("kubectl-set", ChangeType.MODIFIED)
    assert deployment.diff == {
        "spec.template.spec.containers[geo].image": ("hotel/geo:1.0", "hotel/geo:2.0-broken")
    }
    config_change = by_kind["ConfigMap"]
    assert config_change.manager == "kubectl-edit"
    assert config_change.diff == {"data.DB_HOST": ("mongodb-geo", "mongodb-geo-typo")}
    good = journal.last_known_good(HOTEL, "ConfigMap", "geo-config", before=config_change.at)
    assert good == {"data": {"DB_HOST": "mongodb-geo", "DB_PASSWORD": REDACTED}}

    # A fresh journal (a restart) over the same storage finds nothing new.
    restarted = ChangeJournal(store=store, clock=cluster.clock, cluster="lab", namespaces=["hotel"])
    assert restarted.sync(kube) == []
