"""Faults that are a spec change: each is injected into a running lab, shows its symptoms in
pod states, events, logs and metrics within 10 lab seconds, and is then reverted by kubectl —
never by the injector — after which the symptoms clear and the mitigation oracle passes."""

from __future__ import annotations

import json
from collections.abc import Callable

from lab.faults import fault
from tests.lab.faults.conftest import HOTEL, SHOP, Lab, error_ratio, fixed, inject

MakeLab = Callable[..., Lab]


_inject = inject
_fixed = fixed


def _waiting(lab: Lab, workload: str) -> set[str]:
    return {
        cs["state"]["waiting"].get("reason", "")
        for cs in lab.container_states(workload)
        if "waiting" in cs["state"]
    }


def _last_terminated(lab: Lab, workload: str) -> set[str]:
    return {
        cs["lastState"]["terminated"].get("reason", "")
        for cs in lab.container_states(workload)
        if "terminated" in (cs.get("lastState") or {})
    }


def _ns(lab: Lab) -> str:
    return f'namespace="{lab.namespace}"'


def test_scale_to_zero(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "scale-to-zero")
    assert injection.target == "geo" and injection.changes == (
        "Deployment/geo: spec.replicas 1 → 0",
    )
    assert lab.pods("geo") == []
    assert any(r == "ScalingReplicaSet" and "to 0" in m for r, m in lab.events("geo")), lab.events(
        "geo"
    )
    assert "connection refused" in lab.logs("search")
    assert lab.metric(f'kube_deployment_spec_replicas{{{_ns(lab)},deployment="geo"}}') == {
        "geo": 0.0
    }
    assert error_ratio(lab, "search") > 0.9

    assert "deployment.apps/geo scaled" in lab.kubectl("scale", "deployment/geo", "--replicas=1")
    _fixed(lab, injection, "geo", "search")


def test_wrong_target_port(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "wrong-target-port")
    assert injection.params == {"port": 9999}
    # The callee looks healthy; only connections through the Service are refused.
    assert all(cs["ready"] for cs in lab.container_states("geo"))
    assert ":9999: connect: connection refused" in lab.logs("search")
    refused = lab.metric(
        f'sum by (peer) (rate(http_client_requests_total{{{_ns(lab)},peer="geo",code="503"}}[10s]))'
    )
    assert refused and next(iter(refused.values())) > 1.0
    assert error_ratio(lab, "search") > 0.9

    lab.kubectl(
        "patch",
        "service/geo",
        "--type=json",
        "-p",
        '[{"op": "replace", "path": "/spec/ports/0/targetPort", "value": 8083}]',
    )
    _fixed(lab, injection, "geo", "search")


def test_image_not_found(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "image-not-found")
    assert injection.params == {"tag": "1.2"}  # the next release, never pushed
    assert _waiting(lab, "user") & {"ErrImagePull", "ImagePullBackOff"}
    assert any(
        r == "Failed" and "hotelreservation:1.2" in m and "not found" in m
        for r, m in lab.events("user-")
    )
    assert "trying and failing to pull image" in lab.logs("user")
    pulls = lab.metric(
        f'kube_pod_container_status_waiting_reason{{{_ns(lab)},reason=~"ErrImagePull|ImagePullBackOff"}}'
    )
    assert any(pod.startswith("user-") for pod in pulls), pulls

    assert "rolled back" in lab.kubectl("rollout", "undo", "deployment/user")
    _fixed(lab, injection, "user")
    assert not _waiting(lab, "user")


def test_crashing_image(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "crashing-image")
    assert injection.params == {"tag": "1.2-rc1"}
    assert str(injection.truth.category) == "application/code_defect"
    assert "CrashLoopBackOff" in _waiting(lab, "recommendation")
    assert any(r == "BackOff" for r, _ in lab.events("recommendation-"))
    assert "panic: runtime error: invalid memory address" in lab.logs(
        "recommendation", previous=True
    )
    crashing = lab.metric(
        f'kube_pod_container_status_waiting_reason{{{_ns(lab)},reason="CrashLoopBackOff"}}'
    )
    assert any(pod.startswith("recommendation-") for pod in crashing), crashing

    lab.kubectl("rollout", "undo", "deployment/recommendation")
    _fixed(lab, injection, "recommendation")


def test_wrong_binary(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "wrong-binary")
    assert injection.params == {"command": "profileservice"}
    assert "StartError" in _last_terminated(lab, "profile")
    assert any(
        r == "Failed" and 'exec: "profileservice": executable file not found in $PATH' in m
        for r, m in lab.events("profile-")
    )
    # The failed start wrote nothing: its log is empty, the running old pod's log is not.
    assert "Starting server at :8081" in lab.logs("profile")
    failed = lab.metric(
        f'kube_pod_container_status_last_terminated_reason{{{_ns(lab)},reason="StartError"}}'
    )
    assert any(pod.startswith("profile-") for pod in failed), failed

    lab.kubectl("rollout", "undo", "deployment/profile")
    _fixed(lab, injection, "profile")


def test_node_selector_mismatch(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "node-selector-mismatch")
    pending = [p for p in lab.pods("reservation") if p["status"].get("phase") == "Pending"]
    assert pending and not pending[0]["spec"].get("nodeName")
    assert any(
        r == "FailedScheduling" and "didn't match Pod's node affinity/selector" in m
        for r, m in lab.events("reservation-")
    ), lab.events("reservation-")
    assert "is waiting to start" in lab.logs("reservation")
    phases = lab.metric(f'kube_pod_status_phase{{{_ns(lab)},phase="Pending"}} == 1')
    assert any(pod.startswith("reservation-") for pod in phases), phases

    # Not an undo: the operator removes the selector (any correct fix heals).
    lab.kubectl(
        "patch",
        "deployment/reservation",
        "--type=json",
        "-p",
        '[{"op": "remove", "path": "/spec/template/spec/nodeSelector"}]',
    )
    _fixed(lab, injection, "reservation")


def test_memory_limit_too_low(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "memory-limit-too-low")
    assert str(injection.params["memory"]).endswith("Mi")
    assert "OOMKilled" in _last_terminated(lab, "mongodb-geo")
    assert any(r == "BackOff" for r, _ in lab.events("mongodb-geo-")) or any(
        cs["restartCount"] >= 1 for cs in lab.container_states("mongodb-geo")
    )
    assert "Starting server at :27017" in lab.logs("mongodb-geo", previous=True)
    oom = lab.metric(
        f'kube_pod_container_status_last_terminated_reason{{{_ns(lab)},reason="OOMKilled"}}'
    )
    assert any(pod.startswith("mongodb-geo-") for pod in oom), oom
    assert error_ratio(lab, "geo") > 0.1  # the database is down between restarts

    container = lab.world.api.get("Deployment", HOTEL, "mongodb-geo")["spec"]["template"][  # type: ignore[index]
        "spec"
    ]["containers"][0]["name"]
    lab.kubectl(
        "set",
        "resources",
        "deployment/mongodb-geo",
        f"--containers={container}",
        "--limits=memory=512Mi",
        "--requests=memory=128Mi",
    )
    _fixed(lab, injection, "mongodb-geo", "geo")


def test_cpu_limit_too_low(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = _inject(lab, "cpu-limit-too-low")
    assert injection.target == "currency"
    assert all(cs["ready"] for cs in lab.container_states("currency"))  # slow, not down
    throttled = lab.metric(
        f"rate(container_cpu_cfs_throttled_periods_total{{{_ns(lab)}}}[10s]) > 0"
    )
    assert any(pod.startswith("currency-") for pod in throttled), throttled
    p99 = lab.metric(
        "histogram_quantile(0.99, sum by (service, le) (rate("
        f'http_server_request_duration_seconds_bucket{{{_ns(lab)},service="currency"}}[10s])))'
    )
    assert p99["currency"] > 0.8  # seconds: far past the 800 ms SLO
    assert "context deadline exceeded" in lab.logs("frontend") + lab.logs("checkout")

    lab.kubectl(
        "set", "resources", "deployment/currency", "--limits=cpu=500m", "--requests=cpu=50m"
    )
    _fixed(lab, injection, "currency", "frontend")


def test_wrong_database_host(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "wrong-database-host")
    assert injection.changes[0] == (
        "ConfigMap/hotel-config: data.GEO_MONGO_ADDR mongodb-geo:27017 → mongodb-geo-primary:27017"
    )
    assert "rollout restart" in injection.changes[1]
    assert "CrashLoopBackOff" in _waiting(lab, "geo")
    assert any(r == "BackOff" for r, _ in lab.events("geo-"))
    assert "panic: no reachable servers" in lab.logs("geo", previous=True)
    crashing = lab.metric(
        f'kube_pod_container_status_waiting_reason{{{_ns(lab)},reason="CrashLoopBackOff"}}'
    )
    assert any(pod.startswith("geo-") for pod in crashing), crashing

    lab.kubectl(
        "patch",
        "configmap/hotel-config",
        "--type=merge",
        "-p",
        json.dumps({"data": {"GEO_MONGO_ADDR": "mongodb-geo:27017"}}),
    )
    lab.kubectl("rollout", "restart", "deployment/geo")
    _fixed(lab, injection, "geo")


def test_feature_flag(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = _inject(lab, "feature-flag")
    assert injection.params == {"flag": "cartFailure", "variant": "on"}
    assert injection.truth.root_causes == ("cart", "flagd")
    assert all(cs["ready"] for cs in lab.container_states("cart"))
    assert "Wasn't able to connect to redis" in lab.logs("cart")
    assert error_ratio(lab, "cart") > 0.9
    assert not [e for e in lab.events("cart-") if e[0] in ("BackOff", "Failed")]

    # The operator edits the flag back off: get, change, replace.
    cm = json.loads(lab.kubectl("get", "configmap/flagd-config", "-o", "json"))
    doc = json.loads(cm["data"]["demo.flagd.json"])
    doc["flags"]["cartFailure"]["defaultVariant"] = "off"
    cm["data"]["demo.flagd.json"] = json.dumps(doc, indent=2)
    lab.kubectl("replace", "-f", "-", stdin=json.dumps(cm))
    _fixed(lab, injection, "cart", "frontend")


def test_resource_quota_too_low(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = fault("resource-quota-too-low").inject(lab.world, app=HOTEL)
    lab.advance(3)
    assert not lab.check(injection).mitigated
    assert injection.params == {"pods": 18}
    # The running pod is untouched; the restart's new pod is refused at admission.
    assert len(lab.pods("search")) == 1
    refused = [m for r, m in lab.events("search-") if r == "FailedCreate"]
    assert refused and "exceeded quota: compute-quota" in refused[0]
    assert "Starting server at :8082" in lab.logs("search")
    # kube-state-metrics has no gauge for a refused create; the replicas look fine.
    assert lab.metric(
        f'kube_deployment_status_replicas_unavailable{{{_ns(lab)},deployment="search"}}'
    ) == {"search": 0.0}

    assert 'resourcequota "compute-quota" deleted' in lab.kubectl(
        "delete", "resourcequota/compute-quota", "--wait=false"
    )
    _fixed(lab, injection, "search")
