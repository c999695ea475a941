"""Which workload a pod belongs to: `OwnerIndex` (one pass) gives the answers the pairwise
selector match gave, on the lab's two apps read through the official client, and on the cases
selectors alone cannot tell apart."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.detection.scan_rules import OwnerIndex, owner_of
from agents.model import PodState, WorkloadState
from lab.sim.world import LabWorld, WorldConfig

APPS = ("hotel-reservation", "online-shop")


def selector_owner(pod: PodState, workloads: Sequence[WorkloadState]) -> str:
    """The quadratic rule OwnerIndex replaced, kept here as the reference."""
    best: WorkloadState | None = None
    for wl in workloads:
        matches = bool(wl.selector) and all(pod.labels.get(k) == v for k, v in wl.selector.items())
        if matches and (best is None or len(wl.selector) > len(best.selector)):
            best = wl
    return best.name if best is not None else pod.name


def workload(name: str, selector: dict[str, str], kind: str = "Deployment") -> WorkloadState:
    return WorkloadState(
        kind=kind,
        name=name,
        namespace="ns",
        replicas=1,
        ready_replicas=1,
        available_replicas=1,
        updated_replicas=1,
        generation=1,
        observed_generation=1,
        selector=selector,
        images={},
    )


def pod(name: str, labels: dict[str, str], owner: str | None = None) -> PodState:
    return PodState(
        name=name,
        namespace="ns",
        phase="Running",
        ready=True,
        node="node-1",
        labels=labels,
        owner=owner,
        containers=(),
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubernetesCluster]:
    kubeconfig = tmp_path_factory.mktemp("owners") / "kubeconfig"
    config = WorldConfig(apps=APPS, seed=3, serve_api=True, kubeconfig=kubeconfig)
    with LabWorld(config) as world:
        world.wait_healthy()
        cluster = KubernetesCluster.connect(kubeconfig=Path(kubeconfig), cluster_name="lab")
        try:
            yield cluster
        finally:
            cluster.close()


@pytest.mark.parametrize("namespace", APPS)
def test_the_lab_apps_pods_get_the_owners_selectors_gave(
    lab: KubernetesCluster, namespace: str
) -> None:
    pods, workloads = lab.pods(namespace), lab.workloads(namespace)
    assert len(pods) >= len(workloads) > 10
    index = OwnerIndex(workloads)
    answers = {p.name: index.owner_of(p) for p in pods}
    assert answers == {p.name: selector_owner(p, workloads) for p in pods}
    # Every pod of these apps is a Deployment's, found through its ReplicaSet.
    assert set(answers.values()) == {w.name for w in workloads if w.replicas > 0}
    assert all(p.owner and p.owner.startswith("ReplicaSet/") for p in pods)


def test_selectors_decide_for_pods_without_a_known_owner() -> None:
    workloads = [
        workload("web", {"app": "web"}),
        workload("web-canary", {"app": "web", "track": "canary"}),
        workload("also-web", {"app": "web"}),  # a tie with `web`: the earlier one wins
        workload("empty", {}),  # an empty selector matches nothing here
    ]
    pods = [
        pod("web-1", {"app": "web"}),
        pod("canary-1", {"track": "canary", "app": "web"}),
        pod("stray", {"app": "db"}),
        pod("bare", {}),
        pod("orphan", {"app": "web"}, owner="ReplicaSet/gone-5d9c7"),  # no hash label
    ]
    index = OwnerIndex(workloads)
    answers = {p.name: index.owner_of(p) for p in pods}
    assert answers == {
        "web-1": "web",
        "canary-1": "web-canary",
        "stray": "stray",
        "bare": "bare",
        "orphan": "web",
    }
    assert answers == {p.name: selector_owner(p, workloads) for p in pods}
    assert answers == {p.name: owner_of(p, workloads) for p in pods}


def test_the_controller_reference_wins_over_an_overlapping_selector() -> None:
    # Two workloads whose selectors both match: the references say whose pod it is.
    workloads = [
        workload("api", {"tier": "backend"}),
        workload("api-v2", {"tier": "backend", "app": "api"}),
        workload("cache", {"tier": "backend"}, kind="StatefulSet"),
    ]
    labels = {"tier": "backend", "app": "api"}
    index = OwnerIndex(workloads)
    rs_pod = pod("api-7f9-x", {**labels, "pod-template-hash": "7f9"}, owner="ReplicaSet/api-7f9")
    sts_pod = pod("cache-0", labels, owner="StatefulSet/cache")
    assert index.owner_of(rs_pod) == "api"
    assert index.owner_of(sts_pod) == "cache"
    assert selector_owner(sts_pod, workloads) == "api-v2"  # what selectors alone said


def test_thousands_of_pods_and_workloads_in_one_pass() -> None:
    # 3,000 x 3,000 was 9M selector comparisons per scan; the per-test timeout guards it.
    workloads = [workload(f"svc-{i}", {"app": f"svc-{i}"}) for i in range(3000)]
    pods = [
        pod(
            f"svc-{i}-abc-{r}",
            {"app": f"svc-{i}", "pod-template-hash": "abc"},
            owner=f"ReplicaSet/svc-{i}-abc",
        )
        for i in range(3000)
        for r in range(2)
    ]
    pods.append(pod("loose", {"app": "svc-7"}))
    index = OwnerIndex(workloads)
    answers = [index.owner_of(p) for p in pods]
    assert answers[:4] == ["svc-0", "svc-0", "svc-1", "svc-1"]
    assert answers[-1] == "svc-7"
    assert len(set(answers)) == 3000
