"""Conformance: PodDisruptionBudget status and the eviction subresource (what `kubectl drain`
relies on), and a Job that gives up after its backoffLimit."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.lab.kube.conftest import Target, deployment, eventually, wait_rolled_out


def _evict(core: client.CoreV1Api, ns: str, pod: str) -> None:
    core.create_namespaced_pod_eviction(
        pod, ns, client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=ns))
    )


def _budget(policy: client.PolicyV1Api, ns: str, allowed: int, timeout_s: float) -> None:
    eventually(
        lambda: (
            (s := policy.read_namespaced_pod_disruption_budget("web", ns).status) is not None
            and s.disruptions_allowed == allowed
            and s.current_healthy == 2
        ),
        timeout_s=timeout_s,
        what=f"disruptionsAllowed {allowed}",
    )


def test_eviction_is_refused_while_the_budget_allows_no_disruption(
    apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    policy = client.PolicyV1Api(target.api_client)
    apps.create_namespaced_deployment(ns, deployment("web", replicas=2))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    policy.create_namespaced_pod_disruption_budget(
        ns,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    _budget(policy, ns, 0, target.timeout_s)
    pods = core.list_namespaced_pod(ns, label_selector="app=web").items
    victim = pods[0].metadata.name
    with pytest.raises(ApiException) as info:
        _evict(core, ns, victim)
    assert info.value.status == 429
    body = json.loads(info.value.body)
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert core.read_namespaced_pod(victim, ns).metadata.deletion_timestamp is None

    policy.patch_namespaced_pod_disruption_budget("web", ns, {"spec": {"minAvailable": 1}})
    _budget(policy, ns, 1, target.timeout_s)
    _evict(core, ns, victim)  # granted: the pod goes, its ReplicaSet replaces it
    eventually(
        lambda: all(
            p.metadata.name != victim or p.metadata.deletion_timestamp is not None
            for p in core.list_namespaced_pod(ns, label_selector="app=web").items
        ),
        timeout_s=target.timeout_s,
        what="the evicted pod going away",
    )
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    _budget(policy, ns, 1, target.timeout_s)


def test_job_fails_with_backoff_limit_exceeded(
    core: client.CoreV1Api, target: Target, ns: str
) -> None:
    batch = client.BatchV1Api(target.api_client)
    batch.create_namespaced_job(
        ns,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate"},
            "spec": {
                "backoffLimit": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "migrate", "image": "nginx:1.25", "command": ["/no/such"]}
                        ],
                    }
                },
            },
        },
    )
    job = batch.read_namespaced_job("migrate", ns)
    uid = job.metadata.uid
    # The server generates the selector and the matching template labels from the uid.
    assert job.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    assert job.spec.template.metadata.labels["job-name"] == "migrate"

    def failed() -> client.V1JobCondition | None:
        status = batch.read_namespaced_job("migrate", ns).status
        return next(
            (c for c in status.conditions or [] if c.type == "Failed" and c.status == "True"),
            None,
        )

    condition = eventually(failed, timeout_s=target.timeout_s * 2, what="the Job to fail")
    assert condition.reason == "BackoffLimitExceeded"
    assert batch.read_namespaced_job("migrate", ns).status.failed == 2
    pods = core.list_namespaced_pod(ns, label_selector="job-name=migrate").items
    assert len(pods) == 2 and {p.status.phase for p in pods} == {"Failed"}
    events = core.list_namespaced_event(ns, field_selector="involvedObject.name=migrate").items
    assert any(e.reason == "BackoffLimitExceeded" and e.type == "Warning" for e in events)
