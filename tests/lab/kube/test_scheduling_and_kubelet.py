"""Conformance: scheduling (nodeSelector, taints, cordon, quota) and the kubelet's container
states (ErrImagePull/ImagePullBackOff, CrashLoopBackOff, OOMKilled), logs of previous
containers, and endpoints following readiness and targetPort."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lab.kube.cluster import LabCluster
from tests.lab.kube.conftest import Target, deployment, events_for, eventually, wait_rolled_out


def _pod(name: str, image: str, **spec: object) -> dict:
    container = {"name": "app", "image": image, **spec.pop("container", {})}  # type: ignore[dict-item]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [container], **spec},
    }


def _waiting_reason(core: client.CoreV1Api, ns: str, name: str) -> str | None:
    statuses = core.read_namespaced_pod(name, ns).status.container_statuses or []
    waiting = statuses[0].state.waiting if statuses else None
    return waiting.reason if waiting else None


def _reasons(core: client.CoreV1Api, ns: str, name: str) -> set[str]:
    return {e.reason for e in events_for(core, ns, name)}


# --------------------------------------------------------------------------- scheduling


def test_unmatched_node_selector_stays_pending_with_failed_scheduling(
    core: client.CoreV1Api, target: Target, ns: str
) -> None:
    core.create_namespaced_pod(
        ns, _pod("picky", "nginx:1.25", nodeSelector={"disktype": "unobtainium"})
    )
    event = eventually(
        lambda: next(
            (e for e in events_for(core, ns, "picky") if e.reason == "FailedScheduling"), None
        ),
        timeout_s=target.timeout_s,
        what="a FailedScheduling event",
    )
    assert event.type == "Warning"
    assert "nodes are available" in event.message
    assert "node(s) didn't match Pod's node affinity/selector" in event.message
    pod = core.read_namespaced_pod("picky", ns)
    assert pod.status.phase == "Pending" and not pod.spec.node_name
    scheduled = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")


def test_scheduler_message_counts_every_node(
    lab: LabCluster, core: client.CoreV1Api, ns: str
) -> None:
    core.create_namespaced_pod(ns, _pod("nowhere", "nginx:1.25", nodeSelector={"x": "y"}))
    event = eventually(
        lambda: next(
            (e for e in events_for(core, ns, "nowhere") if e.reason == "FailedScheduling"), None
        ),
        timeout_s=10,
        what="a FailedScheduling event",
    )
    assert event.message.startswith(
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    )


def test_taints_and_cordons_steer_pods(lab: LabCluster, core: client.CoreV1Api, ns: str) -> None:
    nodes = [n.metadata.name for n in core.list_node().items]
    taint = {"key": "lab/dedicated", "value": "db", "effect": "NoSchedule"}
    try:
        core.patch_node(nodes[0], {"spec": {"taints": [taint]}})
        core.patch_node(nodes[1], {"spec": {"unschedulable": True}})
        for i in range(3):
            core.create_namespaced_pod(ns, _pod(f"p{i}", "nginx:1.25"))
        tolerant = _pod(
            "tolerant",
            "nginx:1.25",
            tolerations=[
                {"key": "lab/dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
            ],
            nodeSelector={"kubernetes.io/hostname": nodes[0]},
        )
        core.create_namespaced_pod(ns, tolerant)

        def placed() -> dict[str, str] | None:
            pods = core.list_namespaced_pod(ns).items
            where = {p.metadata.name: p.spec.node_name for p in pods}
            return where if all(where.values()) and len(where) == 4 else None

        where = eventually(placed, timeout_s=10, what="pods to be scheduled")
        assert {where[f"p{i}"] for i in range(3)} == {nodes[2]}
        assert where["tolerant"] == nodes[0]
    finally:
        core.patch_node(nodes[0], {"spec": {"taints": None}})
        core.patch_node(nodes[1], {"spec": {"unschedulable": None}})


def test_quota_refuses_pods_and_the_replica_set_reports_failed_create(
    core: client.CoreV1Api, apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    core.create_namespaced_resource_quota(
        ns, {"metadata": {"name": "small"}, "spec": {"hard": {"pods": "2"}}}
    )
    eventually(
        lambda: core.read_namespaced_resource_quota("small", ns).status.hard or None,
        timeout_s=target.timeout_s,
        what="the quota to be observed",
    )
    apps.create_namespaced_deployment(ns, deployment("web", replicas=3))
    failed = eventually(
        lambda: next(
            (
                e
                for rs in apps.list_namespaced_replica_set(ns).items
                for e in events_for(core, ns, rs.metadata.name)
                if e.reason == "FailedCreate"
            ),
            None,
        ),
        timeout_s=target.timeout_s,
        what="a FailedCreate event",
    )
    assert failed.type == "Warning"
    assert "exceeded quota: small" in failed.message and "forbidden" in failed.message
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod(ns, _pod("extra", "nginx:1.25"))
    assert info.value.status == 403

    def used() -> dict[str, str] | None:
        status = core.read_namespaced_resource_quota("small", ns).status
        return status.used if status.used and status.used.get("pods") == "2" else None

    eventually(used, timeout_s=target.timeout_s, what="quota usage of 2 pods")
    assert used() == {"pods": "2"}


# --------------------------------------------------------------------------- kubelet


def test_missing_image_goes_err_image_pull_then_back_off(
    core: client.CoreV1Api, target: Target, ns: str
) -> None:
    core.create_namespaced_pod(ns, _pod("nopull", "nginx:no-such-tag-lab"))
    eventually(
        lambda: _waiting_reason(core, ns, "nopull") == "ImagePullBackOff",
        timeout_s=target.timeout_s,
        what="ImagePullBackOff",
    )
    reasons = _reasons(core, ns, "nopull")
    assert {"Pulling", "Failed", "BackOff"} <= reasons
    messages = [e.message for e in events_for(core, ns, "nopull")]
    assert 'Failed to pull image "nginx:no-such-tag-lab"' in " ".join(messages)
    assert "Error: ErrImagePull" in messages
    assert core.read_namespaced_pod("nopull", ns).status.phase == "Pending"


def test_crash_loop_backs_off_restarts_and_keeps_previous_logs(
    lab: LabCluster, core: client.CoreV1Api, ns: str
) -> None:
    core.create_namespaced_pod(ns, _pod("crasher", "lab/crashloop"))

    def restarted() -> client.V1ContainerStatus | None:
        status = core.read_namespaced_pod("crasher", ns).status.container_statuses
        return status[0] if status and status[0].restart_count >= 2 else None

    status = eventually(restarted, timeout_s=30, what="two restarts")
    assert status.last_state.terminated.exit_code == 1
    assert status.last_state.terminated.reason == "Error"
    eventually(
        lambda: _waiting_reason(core, ns, "crasher") == "CrashLoopBackOff",
        timeout_s=30,
        what="CrashLoopBackOff",
    )
    waiting = core.read_namespaced_pod("crasher", ns).status.container_statuses[0].state.waiting
    assert waiting.message.startswith("back-off ") and "restarting failed container=app" in (
        waiting.message
    )
    backoff = [e for e in events_for(core, ns, "crasher") if e.reason == "BackOff"]
    assert backoff and backoff[0].type == "Warning"
    previous = core.read_namespaced_pod_log("crasher", ns, previous=True)
    assert "panic: cannot connect to database" in previous
    assert core.read_namespaced_pod("crasher", ns).status.phase == "Running"


def test_memory_over_the_limit_is_oom_killed(
    lab: LabCluster, core: client.CoreV1Api, ns: str
) -> None:
    core.create_namespaced_pod(
        ns, _pod("hungry", "lab/oom", container={"resources": {"limits": {"memory": "128Mi"}}})
    )

    def killed() -> client.V1ContainerStateTerminated | None:
        statuses = core.read_namespaced_pod("hungry", ns).status.container_statuses or []
        last = statuses[0].last_state if statuses else None
        return last.terminated if last and last.terminated else None

    terminated = eventually(killed, timeout_s=30, what="an OOM kill")
    assert (terminated.reason, terminated.exit_code) == ("OOMKilled", 137)


def test_container_statuses_carry_every_required_field(
    core: client.CoreV1Api, apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=1))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    pod = core.list_namespaced_pod(ns).items[0]
    status = pod.status.container_statuses[0]
    assert status.ready and status.started and status.state.running.started_at
    assert status.image_id and status.container_id and status.restart_count == 0
    assert pod.status.pod_ip and pod.status.host_ip and pod.status.start_time
    assert {c.type for c in pod.status.conditions} >= {
        "Ready",
        "PodScheduled",
        "Initialized",
        "ContainersReady",
    }
    log = core.read_namespaced_pod_log(pod.metadata.name, ns, tail_lines=1)
    assert log.count("\n") <= 1


def test_logs_of_an_unknown_container_are_400(
    core: client.CoreV1Api, apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=1))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    pod = core.list_namespaced_pod(ns).items[0].metadata.name
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod_log(pod, ns, container="nope")
    assert info.value.status == 400


# --------------------------------------------------------------------------- endpoints


def _endpoint_ips(core: client.CoreV1Api, ns: str, name: str) -> tuple[list[str], list[str]]:
    try:
        endpoints = core.read_namespaced_endpoints(name, ns)
    except ApiException:
        return [], []
    ready, not_ready = [], []
    for subset in endpoints.subsets or []:
        ready += [a.ip for a in subset.addresses or []]
        not_ready += [a.ip for a in subset.not_ready_addresses or []]
    return sorted(ready), sorted(not_ready)


def test_endpoints_follow_ready_pods_and_resolve_named_target_ports(
    core: client.CoreV1Api, apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(
        ns,
        deployment(
            "web", replicas=2, container={"ports": [{"containerPort": 8080, "name": "http"}]}
        ),
    )
    core.create_namespaced_service(
        ns,
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]},
        },
    )
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    pod_ips = sorted(p.status.pod_ip for p in core.list_namespaced_pod(ns).items)
    eventually(
        lambda: _endpoint_ips(core, ns, "web")[0] == pod_ips,
        timeout_s=target.timeout_s,
        what="endpoints for both pods",
    )
    ports = core.read_namespaced_endpoints("web", ns).subsets[0].ports
    assert [p.port for p in ports] == [8080]
    core.patch_namespaced_service(
        "web", ns, {"spec": {"ports": [{"port": 80, "targetPort": 9999}]}}
    )
    eventually(
        lambda: (
            [p.port for p in core.read_namespaced_endpoints("web", ns).subsets[0].ports] == [9999]
        ),
        timeout_s=target.timeout_s,
        what="a numeric targetPort copied through",
    )
    core.patch_namespaced_service(
        "web", ns, {"spec": {"ports": [{"port": 80, "targetPort": "nope"}]}}
    )
    eventually(
        lambda: not core.read_namespaced_endpoints("web", ns).subsets,
        timeout_s=target.timeout_s,
        what="no endpoints for an unknown port name",
    )


def test_unready_pods_are_not_ready_addresses(
    lab: LabCluster, core: client.CoreV1Api, apps: client.AppsV1Api, ns: str
) -> None:
    apps.create_namespaced_deployment(
        ns,
        deployment(
            "web",
            replicas=1,
            image="lab/unready",
            container={"readinessProbe": {"httpGet": {"path": "/", "port": 80}}},
        ),
    )
    core.create_namespaced_service(
        ns,
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
    )
    ready, not_ready = eventually(
        lambda: _endpoint_ips(core, ns, "web") if _endpoint_ips(core, ns, "web")[1] else None,
        timeout_s=10,
        what="a not-ready address",
    )
    assert ready == [] and len(not_ready) == 1
    pod = core.list_namespaced_pod(ns).items[0].metadata.name
    unhealthy = eventually(
        lambda: [e for e in events_for(core, ns, pod) if e.reason == "Unhealthy"],
        timeout_s=10,
        what="an Unhealthy event",
    )
    assert unhealthy[0].message.startswith("Readiness probe failed")
    deployment_status = apps.read_namespaced_deployment("web", ns).status
    assert not deployment_status.available_replicas
