"""Faults that keep pods off nodes: each is injected into a running lab, shows its symptoms in
pod states, events and metrics, and is then fixed by the kubectl command a person would run,
after which the symptoms clear and the mitigation oracle passes."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from lab.kube.errors import ApiError
from tests.lab.faults.conftest import HOTEL, SHOP, Lab, error_ratio, fixed, inject

MakeLab = Callable[..., Lab]


_inject = inject
_fixed = fixed


def _pending(lab: Lab, workload: str) -> list[dict[str, object]]:
    return [p for p in lab.pods(workload) if p["status"].get("phase") == "Pending"]


def _ns(lab: Lab) -> str:
    return f'namespace="{lab.namespace}"'


def test_requests_exceed_node(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "requests-exceed-node")
    assert injection.target == "rate" and injection.params == {"resource": "cpu", "amount": "16"}
    pending = _pending(lab, "rate")
    assert pending and not pending[0]["spec"].get("nodeName")  # type: ignore[attr-defined]
    assert any(
        r == "FailedScheduling" and "0/3 nodes are available: 3 Insufficient cpu" in m
        for r, m in lab.events("rate-")
    ), lab.events("rate-")
    phases = lab.metric(f'kube_pod_status_phase{{{_ns(lab)},phase="Pending"}} == 1')
    assert any(pod.startswith("rate-") for pod in phases), phases
    # The rolling update keeps the old pod serving: a stuck rollout, not an outage.
    assert any(p["status"].get("phase") == "Running" for p in lab.pods("rate"))

    assert "rolled back" in lab.kubectl("rollout", "undo", "deployment/rate")
    _fixed(lab, injection, "rate")
    assert not _pending(lab, "rate")


def test_requests_exceed_node_memory(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = _inject(lab, "requests-exceed-node", resource="memory")
    assert injection.params["amount"] == "64Gi"
    assert any(
        r == "FailedScheduling" and "3 Insufficient memory" in m for r, m in lab.events("payment-")
    ), lab.events("payment-")

    # Not an undo: the operator sets the request back to something that fits.
    container = lab.world.api.get("Deployment", SHOP, "payment")["spec"]["template"]["spec"][  # type: ignore[index]
        "containers"
    ][0]["name"]
    lab.kubectl(
        "set",
        "resources",
        "deployment/payment",
        f"--containers={container}",
        "--requests=memory=64Mi",
        "--limits=memory=256Mi",
    )
    _fixed(lab, injection, "payment")


def test_node_taint_no_toleration(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "node-taint-no-toleration")
    assert not injection.truth.undoable_fix
    assert "Node/lab-node-1: taint dedicated=batch:NoSchedule" in injection.changes
    assert _pending(lab, "profile")
    assert any(
        r == "FailedScheduling" and "3 node(s) had untolerated taint {dedicated: batch}" in m
        for r, m in lab.events("profile-")
    ), lab.events("profile-")
    nodes = lab.kubectl("get", "nodes", "-o", "jsonpath={.items[*].spec.taints[*].key}")
    assert nodes.split() == ["dedicated"] * 3
    # NoSchedule leaves running pods alone: the old profile pod still serves.
    assert any(p["status"].get("phase") == "Running" for p in lab.pods("profile"))

    for node in ("lab-node-1", "lab-node-2", "lab-node-3"):
        lab.kubectl("taint", "nodes", node, "dedicated-")
    _fixed(lab, injection, "profile")
    assert not _pending(lab, "profile")


def test_node_taint_no_execute_evicts(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = _inject(lab, "node-taint-no-toleration", effect="NoExecute")
    assert any(r == "TaintManagerEviction" for r, _ in lab.events("currency-")), lab.events(
        "currency-"
    )
    assert _pending(lab, "currency")
    assert not any(p["status"].get("phase") == "Running" for p in lab.pods("currency"))

    lab.kubectl("taint", "nodes", "--all", "dedicated-")
    _fixed(lab, injection, "currency", "checkout")


def test_limitrange_too_low(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "limitrange-too-low")
    assert not injection.truth.undoable_fix
    assert injection.target == "mongodb-rate" and injection.params == {"memory": "256Mi"}
    # The deleted pod cannot be replaced: the ReplicaSet's creates are refused.
    assert lab.pods("mongodb-rate") == []
    assert any(
        r == "FailedCreate"
        and "is forbidden: maximum memory usage per Container is 256Mi, but limit is 512Mi" in m
        for r, m in lab.events("mongodb-rate-")
    ), lab.events("mongodb-rate-")
    assert "container-limits" in lab.kubectl("get", "limitrange")
    assert error_ratio(lab, "rate") > 0.05  # cache misses fail; memcached serves the rest

    lab.kubectl("delete", "limitrange", "container-limits")
    _fixed(lab, injection, "mongodb-rate", "rate")


def test_limitrange_defaults_limits_at_admission(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    lab.kubectl(
        "create",
        "-f",
        "-",
        stdin=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "LimitRange",
                "metadata": {"name": "defaults"},
                "spec": {
                    "limits": [
                        {
                            "type": "Container",
                            "default": {"cpu": "300m", "ephemeral-storage": "1Gi"},
                        }
                    ]
                },
            }
        ),
    )
    lab.kubectl("delete", "pod", "-l", "app.kubernetes.io/name=email", "--wait=false")
    lab.advance(5)
    (pod,) = [p for p in lab.pods("email")]
    resources = pod["spec"]["containers"][0]["resources"]
    # The container's own CPU limit stands; the resource it did not set is defaulted.
    assert resources["limits"] == {"cpu": "300m", "memory": "192Mi", "ephemeral-storage": "1Gi"}
    assert resources["requests"]["ephemeral-storage"] == "1Gi"
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: ephemeral-storage request for container email; "
        "ephemeral-storage limit for container email"
    )


def test_pvc_pending(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "pvc-pending")
    assert injection.target == "recommendation"
    claim = lab.world.api.get("PersistentVolumeClaim", HOTEL, "recommendation-cache")
    assert claim is not None and claim["status"]["phase"] == "Pending"
    assert any(
        r == "ProvisioningFailed" and m == 'storageclass.storage.k8s.io "fast" not found'
        for r, m in lab.events("recommendation-cache")
    ), lab.events("recommendation-cache")
    pending = _pending(lab, "recommendation")
    assert pending and not pending[0]["spec"].get("nodeName")  # type: ignore[attr-defined]
    assert any(
        r == "FailedScheduling"
        and m.startswith(
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        )
        for r, m in lab.events("recommendation-")
    ), lab.events("recommendation-")
    assert "Pending" in lab.kubectl("get", "pvc", "recommendation-cache")

    # The claim's class is immutable: put the Deployment back, then drop the claim.
    assert "rolled back" in lab.kubectl("rollout", "undo", "deployment/recommendation")
    lab.kubectl("delete", "pvc", "recommendation-cache", "--wait=false")
    _fixed(lab, injection, "recommendation")


def test_a_claim_of_an_existing_class_binds_and_its_pod_runs(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = _inject(lab, "pvc-pending", storage_class="fast")
    # Re-create the claim with the class the cluster has: the Pending pod is scheduled.
    lab.kubectl("delete", "pvc", "cart-cache", "--wait=false")
    lab.advance(2)
    lab.kubectl(
        "create",
        "-f",
        "-",
        stdin=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "cart-cache"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "standard",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ),
    )
    _fixed(lab, injection, "cart")
    claim = lab.world.api.get("PersistentVolumeClaim", SHOP, "cart-cache")
    assert claim is not None and claim["status"]["phase"] == "Bound"
    assert any(
        v.get("persistentVolumeClaim") for p in lab.pods("cart") for v in p["spec"]["volumes"]
    )


def test_node_not_ready(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "node-not-ready")
    node = str(injection.params["node"])
    assert not injection.truth.undoable_fix
    assert injection.truth.root_causes[0] == "mongodb-profile"
    assert "Unknown" in lab.kubectl(
        "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}"
    )
    taints = lab.kubectl("get", "node", node, "-o", "jsonpath={.spec.taints[*].key}")
    assert "node.kubernetes.io/unreachable" in taints
    (pod,) = lab.pods("mongodb-profile")
    ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and ready.get("reason") == "NodeNotReady", ready
    # What users see depends on what else the dead node ran (the scheduler's placement):
    # some stranded service on the request path fails.
    # (client-seen: a service whose only pod is on the dead node serves no metrics at all).
    seen = lab.signals()
    stranded = ("mongodb-profile", "profile", *injection.truth.root_causes)
    assert any(seen[s][0] > 0.05 for s in stranded if s in seen), seen

    # A person drains the dead node: cordon it and delete its pods (their kubelet cannot
    # confirm, so they stay Terminating while their ReplicaSets replace them elsewhere).
    lab.kubectl("cordon", node)
    on_node = [
        p["metadata"]["name"]
        for p in lab.world.api.list("Pod", HOTEL)
        if p["spec"].get("nodeName") == node
    ]
    lab.kubectl("delete", "pod", *on_node, "--wait=false")
    _fixed(lab, injection, "mongodb-profile", "profile")
    assert all(p["spec"]["nodeName"] != node for p in lab.pods("mongodb-profile"))


def test_limitrange_min_and_unset_max_refuse_a_pod(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL, kubectl=False)
    api = lab.world.api
    api.create(
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "floor", "namespace": HOTEL},
            "spec": {"limits": [{"type": "Container", "min": {"cpu": "200m"}}]},
        },
        field_manager="kubectl",
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": HOTEL},
        "spec": {
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
            ]
        },
    }
    with pytest.raises(ApiError) as refused:
        api.create(pod, field_manager="kubectl")
    assert refused.value.code == 403
    assert refused.value.message == (
        'pods "probe" is forbidden: minimum cpu usage per Container is 200m, but request is 100m'
    )
    # min also defaults the request of a container that sets none: 200m is admitted.
    del pod["spec"]["containers"][0]["resources"]
    created = api.create(pod, field_manager="kubectl")
    assert created["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "200m"}
