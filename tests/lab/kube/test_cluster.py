"""The emulator in-process, on a stepped clock: `ClusterAPI` semantics, determinism, and the
timing of controllers and the kubelet in lab time."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from lab.clock import LabClock
from lab.kube.cluster import LabCluster
from lab.kube.errors import ApiError, Conflict, Forbidden, Invalid, NotFound
from lab.kube.resources import stored_kinds
from tests.lab.kube.conftest import deployment

NS = "work"


@pytest.fixture
def cluster() -> Iterator[LabCluster]:
    lab = LabCluster(clock=LabClock(stepped=True), seed=11)
    lab.api.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, field_manager="test"
    )
    lab.reconcile()
    yield lab
    lab.stop()


def _deploy(cluster: LabCluster, name: str = "web", **kw: Any) -> dict[str, Any]:
    body = deployment(name, **kw)
    body["metadata"]["namespace"] = NS
    return cluster.api.create(body, field_manager="test")


def _pods(cluster: LabCluster, selector: str = "") -> list[dict[str, Any]]:
    return cluster.api.list("Pod", NS, label_selector=selector)


def _container_status(cluster: LabCluster, name: str) -> dict[str, Any]:
    pod = cluster.api.get("Pod", NS, name)
    assert pod is not None
    return pod["status"]["containerStatuses"][0]


def _pod(cluster: LabCluster, name: str, image: str, **container: Any) -> None:
    cluster.api.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "app", "image": image, **container}]},
        },
        field_manager="test",
    )


# --------------------------------------------------------------------------- ClusterAPI


def test_in_process_api_has_the_http_semantics(cluster: LabCluster) -> None:
    api = cluster.api
    with pytest.raises(NotFound) as missing:
        api.patch("ConfigMap", NS, "nope", {"data": {}}, patch_type="merge", field_manager="test")
    assert missing.value.code == 404 and missing.value.status()["reason"] == "NotFound"
    created = api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": NS},
            "data": {"a": "1"},
        },
        field_manager="test",
    )
    stale = dict(created, data={"a": "2"})
    api.replace(dict(created, data={"a": "3"}), field_manager="test")
    with pytest.raises(Conflict):
        api.replace(stale, field_manager="test")
    with pytest.raises(Invalid) as invalid:
        api.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "bad key", "namespace": NS},
                "data": {"k y": "v"},
            },
            field_manager="test",
        )
    assert invalid.value.code == 422 and len(invalid.value.causes) == 2
    assert api.delete("ConfigMap", NS, "cfg") is None
    assert api.get("ConfigMap", NS, "cfg") is None


def test_shared_reads_are_uncopied_and_a_write_never_changes_what_was_read(
    cluster: LabCluster,
) -> None:
    """The simulator and the bench's oracle read through `api.shared` without copies: safe
    only because the store replaces an object on every write instead of changing it."""
    for name, tier in (("a", "web"), ("b", "db")):
        cluster.api.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": NS, "labels": {"tier": tier}},
                "data": {"k": "1"},
            },
            field_manager="test",
        )
    read = cluster.api.shared.get("ConfigMap", NS, "a")
    assert read is not None and read is cluster.api.shared.get("ConfigMap", NS, "a")
    names = [o["metadata"]["name"] for o in cluster.api.shared.list("ConfigMap", NS)]
    assert names == ["a", "b", "kube-root-ca.crt"]  # etcd order, as `list` gives them
    assert [
        o["metadata"]["name"]
        for o in cluster.api.shared.list("ConfigMap", NS, label_selector="tier=db")
    ] == ["b"]
    cluster.api.patch(
        "ConfigMap", NS, "a", {"data": {"k": "2"}}, patch_type="merge", field_manager="test"
    )
    assert read["data"] == {"k": "1"}  # what was read stays as it was
    after = cluster.api.shared.get("ConfigMap", NS, "a")
    assert after is not None and after["data"] == {"k": "2"}
    assert cluster.api.shared.get("ConfigMap", NS, "missing") is None


def test_in_process_dry_run_changes_nothing(cluster: LabCluster) -> None:
    api = cluster.api
    version = cluster.resource_version()
    answer = api.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "svc", "namespace": NS},
            "spec": {"ports": [{"port": 80}]},
        },
        field_manager="t",
        dry_run=True,
    )
    assert answer["spec"]["clusterIP"] and api.get("Service", NS, "svc") is None
    _deploy(cluster)
    version = cluster.resource_version()
    before = api.get("Deployment", NS, "web")
    patched = api.patch(
        "Deployment",
        NS,
        "web",
        {"spec": {"replicas": 9}},
        patch_type="strategic",
        field_manager="t",
        dry_run=True,
    )
    assert patched["spec"]["replicas"] == 9
    assert api.delete("Deployment", NS, "web", dry_run=True) is not None
    assert api.get("Deployment", NS, "web") == before
    assert cluster.resource_version() == version


def test_record_event_bumps_the_count_of_a_repeat(cluster: LabCluster) -> None:
    cm = cluster.api.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": NS}},
        field_manager="t",
    )
    for _ in range(3):
        cluster.api.record_event(involved=cm, reason="Drift", message="changed", type="Warning")
    cluster.clock.advance(5)
    cluster.api.record_event(involved=cm, reason="Drift", message="changed", type="Warning")
    events = [e for e in cluster.api.list("Event", NS) if e["reason"] == "Drift"]
    assert len(events) == 1
    assert events[0]["count"] == 4
    assert events[0]["lastTimestamp"] > events[0]["firstTimestamp"]


def test_quota_admission_is_forbidden_in_process(cluster: LabCluster) -> None:
    cluster.api.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "cpu", "namespace": NS},
            "spec": {"hard": {"requests.cpu": "1"}},
        },
        field_manager="t",
    )
    with pytest.raises(Forbidden) as refused:
        _pod(cluster, "free", "nginx:1.25")
    assert "failed quota: cpu: must specify requests.cpu for: app" in refused.value.message
    _pod(cluster, "big", "nginx:1.25", resources={"requests": {"cpu": "800m"}})
    with pytest.raises(ApiError) as exceeded:
        _pod(cluster, "more", "nginx:1.25", resources={"requests": {"cpu": "300m"}})
    assert exceeded.value.code == 403
    assert exceeded.value.message == (
        'pods "more" is forbidden: exceeded quota: cpu, requested: requests.cpu=300m, used: '
        "requests.cpu=800m, limited: requests.cpu=1"
    )
    cluster.reconcile()
    quota = cluster.api.get("ResourceQuota", NS, "cpu")
    assert quota is not None and quota["status"]["used"] == {"requests.cpu": "800m"}


# --------------------------------------------------------------------------- determinism


def _scenario(seed: int) -> str:
    lab = LabCluster(clock=LabClock(stepped=True), seed=seed)
    try:
        lab.api.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, field_manager="t"
        )
        body = deployment("web", replicas=3)
        body["metadata"]["namespace"] = NS
        lab.api.create(body, field_manager="t")
        lab.api.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "namespace": NS},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
            },
            field_manager="t",
        )
        lab.clock.advance(5)
        lab.api.patch(
            "Deployment",
            NS,
            "web",
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}
                }
            },
            patch_type="strategic",
            field_manager="t",
        )
        lab.clock.advance(20)
        return json.dumps({k: lab.api.list(k) for k in stored_kinds()}, sort_keys=True)
    finally:
        lab.stop()


def test_same_seed_and_calls_give_the_same_objects() -> None:
    first, second = _scenario(5), _scenario(5)
    assert first == second
    assert _scenario(6) != first


# --------------------------------------------------------------------------- lab time


def test_crash_loop_back_off_doubles_in_lab_time(cluster: LabCluster) -> None:
    _pod(cluster, "crash", "lab/crashloop")
    cluster.clock.advance(2)
    assert _container_status(cluster, "crash")["restartCount"] == 1  # first restart at once
    restarts = []
    for _ in range(80):
        cluster.clock.advance(1)
        restarts.append(_container_status(cluster, "crash")["restartCount"])
    # back-off 10 s, then 20 s, then 40 s between restarts
    first_at = [restarts.index(n) for n in (2, 3, 4)]
    assert [b - a for a, b in itertools.pairwise(first_at)] == [20, 40]
    status = _container_status(cluster, "crash")
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["lastState"]["terminated"]["reason"] == "Error"


def test_image_pull_back_off_retries_and_recovers(cluster: LabCluster) -> None:
    _deploy(cluster, replicas=1, image="nginx:9.99")
    cluster.clock.advance(2)
    pod = _pods(cluster)[0]
    assert (
        _container_status(cluster, pod["metadata"]["name"])["state"]["waiting"]["reason"]
        == "ImagePullBackOff"
    )
    cluster.api.patch(
        "Deployment",
        NS,
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}}},
        patch_type="strategic",
        field_manager="t",
    )
    cluster.clock.advance(3)
    deployment_status = cluster.api.get("Deployment", NS, "web")["status"]  # type: ignore[index]
    assert deployment_status["availableReplicas"] == 1
    assert deployment_status["updatedReplicas"] == 1


def test_progress_deadline_exceeded(cluster: LabCluster) -> None:
    _deploy(cluster, replicas=1, image="nginx:9.99", progressDeadlineSeconds=30)
    cluster.clock.advance(20)
    progressing = _condition(cluster, "Progressing")
    assert progressing["status"] == "True"
    cluster.clock.advance(20)
    progressing = _condition(cluster, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")


def _condition(cluster: LabCluster, kind: str) -> dict[str, Any]:
    obj = cluster.api.get("Deployment", NS, "web")
    assert obj is not None
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind)


def test_rolling_update_respects_max_surge_and_unavailable(cluster: LabCluster) -> None:
    _deploy(
        cluster,
        replicas=4,
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        container={
            "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 5}
        },
    )
    cluster.clock.advance(10)
    cluster.api.patch(
        "Deployment",
        NS,
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}}},
        patch_type="strategic",
        field_manager="t",
    )
    peak = 0
    for _ in range(60):
        cluster.clock.advance(1)
        active = [p for p in _pods(cluster) if not p["metadata"].get("deletionTimestamp")]
        ready = [
            p
            for p in active
            if all(c["ready"] for c in p["status"].get("containerStatuses", [{"ready": False}]))
        ]
        peak = max(peak, len(active))
        assert len(ready) >= 4  # maxUnavailable 0
    assert peak == 5  # maxSurge 1
    images = {p["spec"]["containers"][0]["image"] for p in _pods(cluster)}
    assert images == {"nginx:1.26"}


def test_graceful_pod_deletion_and_namespace_teardown(cluster: LabCluster) -> None:
    _deploy(cluster, replicas=2)
    cluster.clock.advance(2)
    name = _pods(cluster)[0]["metadata"]["name"]
    terminating = cluster.api.delete("Pod", NS, name)
    assert terminating is not None and terminating["metadata"]["deletionTimestamp"]
    cluster.reconcile()
    assert cluster.api.get("Pod", NS, name) is None
    killing = [e for e in cluster.api.list("Event", NS) if e["reason"] == "Killing"]
    assert killing and killing[0]["message"] == "Stopping container app"
    cluster.api.delete("Namespace", None, NS)
    cluster.clock.advance(1)
    assert cluster.api.get("Namespace", None, NS) is None
    assert not any(
        cluster.api.list(kind, NS)
        for kind in ("Pod", "ReplicaSet", "Deployment", "Event", "ConfigMap")
    )


def test_hpa_keeps_replicas_within_bounds(cluster: LabCluster) -> None:
    _deploy(cluster, replicas=1)
    cluster.api.create(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": NS},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 3,
                "maxReplicas": 5,
            },
        },
        field_manager="t",
    )
    cluster.clock.advance(2)
    assert cluster.api.get("Deployment", NS, "web")["spec"]["replicas"] == 3  # type: ignore[index]
    hpa = cluster.api.get("HorizontalPodAutoscaler", NS, "web")
    assert hpa is not None and hpa["status"]["desiredReplicas"] == 3


def test_statefulset_rolls_pods_from_the_highest_ordinal(cluster: LabCluster) -> None:
    body = deployment("db", replicas=3)
    body.update(kind="StatefulSet")
    body["metadata"]["namespace"] = NS
    body["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    ]
    cluster.api.create(body, field_manager="t")
    cluster.clock.advance(5)
    claims = cluster.api.list("PersistentVolumeClaim", NS)
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert all(c["status"]["phase"] == "Bound" for c in claims)
    cluster.api.patch(
        "StatefulSet",
        NS,
        "db",
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}}},
        patch_type="strategic",
        field_manager="t",
    )
    cluster.clock.advance(10)
    sts = cluster.api.get("StatefulSet", NS, "db")
    assert sts is not None
    assert sts["status"]["updatedReplicas"] == 3
    assert sts["status"]["currentRevision"] == sts["status"]["updateRevision"]
    assert {p["spec"]["containers"][0]["image"] for p in _pods(cluster, "app=db")} == {"nginx:1.26"}


def test_changing_a_pods_image_restarts_its_container(cluster: LabCluster) -> None:
    _pod(cluster, "swap", "nginx:1.25")
    cluster.clock.advance(2)
    cluster.api.patch(
        "Pod",
        NS,
        "swap",
        {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}},
        patch_type="strategic",
        field_manager="t",
    )
    cluster.clock.advance(2)
    status = _container_status(cluster, "swap")
    assert status["image"] == "docker.io/library/nginx:1.26"
    assert status["restartCount"] == 1 and status["ready"]
    assert status["lastState"]["terminated"]["reason"] == "Completed"
    killing = [e["message"] for e in cluster.api.list("Event", NS) if e["reason"] == "Killing"]
    assert killing == ["Container app definition changed, will be restarted"]
    with pytest.raises(Invalid):  # anything else in a pod's spec is immutable
        cluster.api.patch(
            "Pod",
            NS,
            "swap",
            {"spec": {"restartPolicy": "Never"}},
            patch_type="strategic",
            field_manager="t",
        )


def test_requests_beyond_allocatable_are_unschedulable(cluster: LabCluster) -> None:
    _pod(cluster, "huge", "nginx:1.25", resources={"requests": {"cpu": "100"}})
    cluster.clock.advance(1)
    pod = cluster.api.get("Pod", NS, "huge")
    assert pod is not None and pod["status"]["phase"] == "Pending"
    [event] = [e for e in cluster.api.list("Event", NS) if e["reason"] == "FailedScheduling"]
    assert event["message"] == (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod."
    )
    cluster.clock.advance(31)  # retried, same verdict: the event's count grows
    [event] = [e for e in cluster.api.list("Event", NS) if e["reason"] == "FailedScheduling"]
    assert event["count"] == 2


def test_apply_manifests_creates_then_replaces(cluster: LabCluster) -> None:
    text = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: work}
data: {mode: a}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: api, namespace: work}
  spec: {ports: [{port: 80}]}
"""
    created = cluster.apply_manifests(text, field_manager="lab")
    assert [o["kind"] for o in created] == ["ConfigMap", "Service"]
    ip = created[1]["spec"]["clusterIP"]
    again = cluster.apply_manifests(text.replace("mode: a", "mode: b"), field_manager="lab")
    assert again[0]["data"] == {"mode": "b"}
    assert again[1]["spec"]["clusterIP"] == ip  # a replace keeps the allocated address
    with pytest.raises(NotFound):
        cluster.apply_manifests({"apiVersion": "v9", "kind": "Gadget"}, field_manager="lab")


def test_a_not_ready_node_is_tainted_and_its_pods_evicted(cluster: LabCluster) -> None:
    _deploy(cluster, replicas=3)
    cluster.clock.advance(2)
    victim = _pods(cluster)[0]
    node = victim["spec"]["nodeName"]
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletStopped",
        "message": "kubelet stopped posting node status",
    }
    cluster.api.patch(
        "Node",
        None,
        node,
        {"status": {"conditions": [ready]}},
        patch_type="strategic",
        field_manager="fault",
        subresource="status",
    )
    cluster.clock.advance(2)
    taints = cluster.api.get("Node", None, node)["spec"]["taints"]  # type: ignore[index]
    assert {(t["key"], t["effect"]) for t in taints} == {
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute"),
    }
    pod = cluster.api.get("Pod", NS, victim["metadata"]["name"])
    assert pod is not None and not pod["metadata"].get("deletionTimestamp")
    assert next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")["status"] == (
        "False"
    )
    cluster.clock.advance(300)  # the default 300 s toleration runs out
    evicted = cluster.api.get("Pod", NS, victim["metadata"]["name"])
    assert evicted is not None and evicted["metadata"]["deletionTimestamp"]  # stays Terminating
    live = [p for p in _pods(cluster) if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 3 and all(p["spec"]["nodeName"] != node for p in live)
    ready["status"], ready["reason"] = "True", "KubeletReady"
    cluster.api.patch(
        "Node",
        None,
        node,
        {"status": {"conditions": [ready]}},
        patch_type="strategic",
        field_manager="fault",
        subresource="status",
    )
    cluster.clock.advance(2)
    assert not cluster.api.get("Node", None, node)["spec"].get("taints")  # type: ignore[index]
    assert cluster.api.get("Pod", NS, victim["metadata"]["name"]) is None


def test_events_expire_after_an_hour_of_lab_time(cluster: LabCluster) -> None:
    cm = cluster.api.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": NS}},
        field_manager="t",
    )
    cluster.api.record_event(involved=cm, reason="Old", message="then")
    cluster.clock.advance(3700)
    assert not [e for e in cluster.api.list("Event", NS) if e["reason"] == "Old"]
    cluster.api.record_event(involved=cm, reason="Old", message="then")
    [event] = [e for e in cluster.api.list("Event", NS) if e["reason"] == "Old"]
    assert event["count"] == 1
