"""A quota refusal is retried after the controller's delay, not in a tight loop: the refusal's
message names a fresh pod each time, and re-queueing on the ReplicaSet's own status write used
to spin the controller (thousands of FailedCreate events per lab second)."""

from __future__ import annotations

from lab.clock import LabClock
from lab.kube.cluster import LabCluster

NS = "quota"


def test_a_refused_create_is_retried_at_a_bounded_rate() -> None:
    clock = LabClock(stepped=True)
    cluster = LabCluster(clock=clock, seed=1)
    api = cluster.api
    api.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, field_manager="t"
    )
    api.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "pods", "namespace": NS},
            "spec": {"hard": {"pods": "0"}},
        },
        field_manager="t",
    )
    api.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
                },
            },
        },
        field_manager="t",
    )
    clock.advance(30)
    failed = [e for e in api.list("Event", NS) if e.get("reason") == "FailedCreate"]
    assert 1 <= sum(int(e.get("count", 1)) for e in failed) <= 30
    [rs] = api.list("ReplicaSet", NS)
    conditions = {c["type"]: c for c in rs["status"].get("conditions", [])}
    assert conditions["ReplicaFailure"]["reason"] == "FailedCreate"
    assert "exceeded quota" in conditions["ReplicaFailure"]["message"]
    cluster.stop()
