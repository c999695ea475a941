"""Conformance: the scale subresource, rollouts and revision history, cascading deletion."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.lab.kube.conftest import Target, deployment, eventually, wait_rolled_out

REVISION = "deployment.kubernetes.io/revision"


def _replica_sets(apps: client.AppsV1Api, ns: str) -> list[client.V1ReplicaSet]:
    return list(apps.list_namespaced_replica_set(ns).items)


def _pods(core: client.CoreV1Api, ns: str, selector: str = "app=web") -> list[client.V1Pod]:
    return list(core.list_namespaced_pod(ns, label_selector=selector).items)


def test_scale_subresource_reads_and_writes_replicas(
    apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=1))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    scale = apps.read_namespaced_deployment_scale("web", ns)
    assert scale.spec.replicas == 1 and scale.status.replicas == 1
    assert scale.status.selector == "app=web"
    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}})
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    assert len(_pods(core, ns)) == 3
    with pytest.raises(ApiException) as info:
        apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": -2}})
    assert info.value.status == 422


def test_rollout_creates_revisions_and_keeps_history(
    apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=3))
    first = wait_rolled_out(apps, ns, "web", target.timeout_s)
    assert first.metadata.annotations[REVISION] == "1"
    apps.patch_namespaced_deployment(
        "web",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}}},
    )
    second = wait_rolled_out(apps, ns, "web", target.timeout_s)
    assert second.metadata.annotations[REVISION] == "2"
    assert second.status.observed_generation == second.metadata.generation == 2
    sets = {rs.metadata.annotations[REVISION]: rs for rs in _replica_sets(apps, ns)}
    assert set(sets) == {"1", "2"}
    assert sets["1"].spec.replicas == 0 and sets["2"].spec.replicas == 3
    hash_label = sets["2"].metadata.labels["pod-template-hash"]
    assert sets["2"].metadata.name == f"web-{hash_label}"
    assert sets["2"].metadata.owner_references[0].name == "web"
    pods = _pods(core, ns)
    assert len(pods) == 3 and all(p.spec.containers[0].image == "nginx:1.26" for p in pods)
    assert all(p.metadata.labels["pod-template-hash"] == hash_label for p in pods)
    conditions = {c.type: c.reason for c in second.status.conditions}
    assert conditions == {
        "Available": "MinimumReplicasAvailable",
        "Progressing": "NewReplicaSetAvailable",
    }


def test_revision_history_limit_prunes_old_replica_sets(
    apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=1, revisionHistoryLimit=1))
    for tag in ("1.26", "1.27"):
        wait_rolled_out(apps, ns, "web", target.timeout_s)
        apps.patch_namespaced_deployment(
            "web",
            ns,
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "app", "image": f"nginx:{tag}"}]}}
                }
            },
        )
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    revisions = eventually(
        lambda: (
            sorted(rs.metadata.annotations[REVISION] for rs in _replica_sets(apps, ns))
            if len(_replica_sets(apps, ns)) == 2
            else None
        ),
        timeout_s=target.timeout_s,
        what="old ReplicaSets to be pruned",
    )
    assert revisions == ["2", "3"]


def test_recreate_strategy_replaces_all_pods(
    apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(
        ns, deployment("web", replicas=2, strategy={"type": "Recreate"})
    )
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    apps.patch_namespaced_deployment(
        "web",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}}},
    )
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    images = {
        p.spec.containers[0].image for p in _pods(core, ns) if not p.metadata.deletion_timestamp
    }
    assert images == {"nginx:1.26"}


def test_background_deletion_cascades_to_replica_sets_and_pods(
    apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=2))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    apps.delete_namespaced_deployment("web", ns, propagation_policy="Background")
    eventually(
        lambda: not _replica_sets(apps, ns) and not _pods(core, ns),
        timeout_s=target.timeout_s,
        what="dependents to be collected",
    )


def test_foreground_deletion_waits_for_dependents(
    apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=2))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    apps.delete_namespaced_deployment("web", ns, propagation_policy="Foreground")

    def gone() -> bool:
        try:
            apps.read_namespaced_deployment("web", ns)
        except ApiException as e:
            return e.status == 404
        return False

    eventually(gone, timeout_s=target.timeout_s, what="the deployment to go")
    assert not _replica_sets(apps, ns)


def test_orphan_deletion_keeps_dependents(
    apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=2))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    apps.delete_namespaced_deployment("web", ns, propagation_policy="Orphan")
    sets = eventually(
        lambda: [rs for rs in _replica_sets(apps, ns) if not rs.metadata.owner_references],
        timeout_s=target.timeout_s,
        what="the ReplicaSet to be orphaned",
    )
    assert len(sets) == 1 and sets[0].spec.replicas == 2
    assert len(_pods(core, ns)) == 2


def test_deleting_a_pod_gets_it_replaced(
    apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=2))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    victim = _pods(core, ns)[0].metadata.name
    core.delete_namespaced_pod(victim, ns)
    eventually(
        lambda: (
            len(
                [
                    p
                    for p in _pods(core, ns)
                    if p.metadata.name != victim and p.status.phase == "Running"
                ]
            )
            == 2
        ),
        timeout_s=target.timeout_s,
        what="a replacement pod",
    )


def test_statefulset_creates_ordered_pods(
    apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    body = deployment("db", replicas=3)
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = "db"
    apps.create_namespaced_stateful_set(ns, body)

    def ready() -> bool:
        sts = apps.read_namespaced_stateful_set("db", ns)
        return (sts.status.ready_replicas or 0) == 3

    eventually(ready, timeout_s=target.timeout_s, what="3 ready StatefulSet pods")
    names = sorted(p.metadata.name for p in _pods(core, ns, "app=db"))
    assert names == ["db-0", "db-1", "db-2"]
    apps.patch_namespaced_stateful_set_scale("db", ns, {"spec": {"replicas": 1}})
    eventually(
        lambda: [p.metadata.name for p in _pods(core, ns, "app=db")] == ["db-0"],
        timeout_s=target.timeout_s,
        what="scale-down to db-0",
    )
