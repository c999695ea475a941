"""Faults that keep a container from starting or becoming ready for a reason in its spec:
each is injected into a running lab, shows its symptoms in pod states, events and metrics,
and is then fixed by kubectl — never by the injector — after which the symptoms clear and the
mitigation oracle passes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lab.faults import Injection, fault
from tests.lab.faults.conftest import HOTEL, SHOP, Lab, fixed, healthy, inject

MakeLab = Callable[..., Lab]


def _inject(lab: Lab, fault_id: str, **params: object) -> Injection:
    return inject(lab, fault_id, after_s=15, **params)


_fixed = fixed


def _waiting(lab: Lab, workload: str) -> set[str]:
    return {
        cs["state"]["waiting"].get("reason", "")
        for cs in lab.container_states(workload)
        if "waiting" in cs["state"]
    }


def _ns(lab: Lab) -> str:
    return f'namespace="{lab.namespace}"'


def test_readiness_probe_wrong_port(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "readiness-probe-wrong-port")
    assert injection.target == "search" and injection.params == {"port": 8080}
    # The new pod runs but never turns Ready; the old one keeps serving (rollout stuck).
    states = lab.container_states("search")
    assert any("running" in cs["state"] and not cs["ready"] for cs in states), states
    assert any(
        r == "Unhealthy"
        and "Readiness probe failed: dial tcp" in m
        and ":8080: connect: connection refused" in m
        for r, m in lab.events("search-")
    ), lab.events("search-")
    unready = lab.metric(
        f'kube_pod_container_status_ready{{{_ns(lab)},container="hotel-reserv-search"}} == 0'
    )
    assert any(pod.startswith("search-") for pod in unready), unready

    lab.kubectl(
        "patch",
        "deployment/search",
        "--type=json",
        "-p",
        '[{"op": "replace", "value": 8082, '
        '"path": "/spec/template/spec/containers/0/readinessProbe/tcpSocket/port"}]',
    )
    _fixed(lab, injection, "search")


def test_readiness_probe_wrong_port_shop(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP, kubectl=False)
    injection = _inject(lab, "readiness-probe-wrong-port")
    assert injection.target == "product-catalog"
    assert any(r == "Unhealthy" for r, _ in lab.events("product-catalog-"))
    fault("readiness-probe-wrong-port").recover(lab.world, injection)
    _fixed(lab, injection, "product-catalog")


def test_missing_config_key(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "missing-config-key")
    assert injection.target == "rate"
    assert injection.params == {"key": "RATE_MONGO_ADDR", "new_key": "RATE_MONGO_ADDRESS"}
    assert "CreateContainerConfigError" in _waiting(lab, "rate")
    message = "couldn't find key RATE_MONGO_ADDR in ConfigMap hotel-reservation/hotel-config"
    assert ("Failed", f"Error: {message}") in lab.events("rate-")
    # Nothing was created: no restart counted, no Started event for the new pod.
    waiting = [cs for cs in lab.container_states("rate") if "waiting" in cs["state"]]
    assert waiting and all(cs["restartCount"] == 0 for cs in waiting)
    assert waiting[0]["state"]["waiting"]["message"] == message
    stuck = lab.metric(
        f'kube_pod_container_status_waiting_reason{{{_ns(lab)},reason="CreateContainerConfigError"}}'
    )
    assert any(pod.startswith("rate-") for pod in stuck), stuck

    # The fix a person makes: put the key back under its old name (the kubelet retries).
    lab.kubectl(
        "patch",
        "configmap/hotel-config",
        "--type=merge",
        "-p",
        '{"data": {"RATE_MONGO_ADDR": "mongodb-rate:27017"}}',
    )
    _fixed(lab, injection, "rate")


def test_missing_config_key_shop(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP, kubectl=False)
    injection = _inject(lab, "missing-config-key")
    assert injection.target == "cart"
    assert "CreateContainerConfigError" in _waiting(lab, "cart")
    fault("missing-config-key").recover(lab.world, injection)
    _fixed(lab, injection, "cart")


def _init_states(lab: Lab, workload: str) -> list[dict[str, Any]]:
    return [
        cs
        for p in lab.pods(workload)
        for cs in (p.get("status") or {}).get("initContainerStatuses") or []
    ]


def test_init_container_fails(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = fault("init-container-fails").inject(lab.world, app=HOTEL)
    lab.advance(40)  # two failed runs and a back-off
    assert not lab.check(injection).mitigated
    assert injection.target == "user"
    assert injection.params == {"host": "mongodb-user.hotel-reservation-staging"}
    gates = _init_states(lab, "user")
    assert gates and gates[0]["name"] == "wait-for-mongodb-user"
    assert gates[0]["state"]["waiting"]["reason"] == "CrashLoopBackOff", gates
    assert gates[0]["lastState"]["terminated"]["exitCode"] == 1
    assert any(r == "BackOff" and "wait-for-mongodb-user" in m for r, m in lab.events("user-"))
    # The old pod keeps serving; the new one never gets past its init container.
    assert "Init:CrashLoopBackOff" in lab.kubectl("get", "pods")
    new = next(p for p in lab.pods("user") if p["status"].get("initContainerStatuses"))
    log = lab.kubectl("logs", new["metadata"]["name"], "-c", "wait-for-mongodb-user", "--previous")
    assert "nc: bad address 'mongodb-user.hotel-reservation-staging'" in log

    assert "rolled back" in lab.kubectl("rollout", "undo", "deployment/user")
    _fixed(lab, injection, "user")


def test_init_container_fails_shop(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = _inject(lab, "init-container-fails")
    assert injection.target == "accounting"
    assert _init_states(lab, "accounting")
    # Any correct fix heals: here the gate is pointed at the real broker.
    lab.kubectl(
        "patch",
        "deployment/accounting",
        "--type=json",
        "-p",
        '[{"op": "replace", "path": "/spec/template/spec/initContainers/0/command/2", '
        '"value": "nc -z -w 2 kafka 9092"}]',
    )
    _fixed(lab, injection, "accounting")
    assert all(
        cs["state"].get("terminated", {}).get("exitCode") == 0
        for cs in _init_states(lab, "accounting")
    )


def _create_pull_secret(lab: Lab, password: str) -> None:
    """`kubectl create secret docker-registry`, rendered client-side and applied (the lab's
    API speaks JSON and YAML, not the protobuf kubectl create sends)."""
    manifest = lab.kubectl(
        "create",
        "secret",
        "docker-registry",
        "regcred",
        "--docker-server=registry.lab.internal",
        "--docker-username=lab-puller",
        f"--docker-password={password}",
        "--dry-run=client",
        "-o",
        "yaml",
    )
    lab.kubectl("apply", "-f", "-", stdin=manifest)


def test_image_pull_unauthorized(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = _inject(lab, "image-pull-unauthorized")
    assert injection.target == "reservation"
    mirror = "registry.lab.internal/lab/hotel/hotelreservation:1.0"
    assert injection.changes == (
        "Deployment/reservation: container hotel-reserv-reservation image "
        f"ghcr.io/lab/hotel/hotelreservation:1.0 → {mirror}",
    )
    assert _waiting(lab, "reservation") & {"ErrImagePull", "ImagePullBackOff"}
    assert any(
        r == "Failed"
        and f'Failed to pull image "{mirror}"' in m
        and "manifests/1.0: 401 Unauthorized" in m
        for r, m in lab.events("reservation-")
    ), lab.events("reservation-")
    pulls = lab.metric(
        f'kube_pod_container_status_waiting_reason{{{_ns(lab)},reason=~"ErrImagePull|ImagePullBackOff"}}'
    )
    assert any(pod.startswith("reservation-") for pod in pulls), pulls

    # The fix that keeps the mirror: give the pods the puller account.
    _create_pull_secret(lab, "s3cr3t-pull-token")
    lab.kubectl(
        "patch",
        "deployment/reservation",
        "-p",
        '{"spec": {"template": {"spec": {"imagePullSecrets": [{"name": "regcred"}]}}}}',
    )
    _fixed(lab, injection, "reservation")
    assert all(cs["image"] == mirror for cs in lab.container_states("reservation"))


def test_image_pull_unauthorized_wrong_password_and_undo(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = _inject(lab, "image-pull-unauthorized")
    assert injection.target == "shipping"
    # A pull secret with the wrong password is refused the same way.
    _create_pull_secret(lab, "guess")
    lab.kubectl(
        "patch",
        "deployment/shipping",
        "-p",
        '{"spec": {"template": {"spec": {"imagePullSecrets": [{"name": "regcred"}]}}}}',
    )
    lab.advance(30)
    assert _waiting(lab, "shipping") & {"ErrImagePull", "ImagePullBackOff"}
    assert not lab.check(injection).mitigated

    lab.kubectl("rollout", "undo", "deployment/shipping", "--to-revision=1")
    _fixed(lab, injection, "shipping")


def test_readiness_probe_wrong_port_on_an_http_probe(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    # The team had switched product-catalog to an HTTP health check on its own port.
    lab.kubectl(
        "patch",
        "deployment/product-catalog",
        "--type=json",
        "-p",
        '[{"op": "replace", "path": "/spec/template/spec/containers/0/readinessProbe", '
        '"value": {"httpGet": {"path": "/healthz", "port": 3550}, "periodSeconds": 5}}]',
    )
    lab.advance(30)
    healthy(lab, "product-catalog")
    injection = _inject(lab, "readiness-probe-wrong-port")
    assert injection.changes[0].endswith("readinessProbe httpGet.port 3550 → 8080")
    refused = [
        m
        for r, m in lab.events("product-catalog-")
        if r == "Unhealthy" and '/healthz": dial tcp ' in m
    ]
    # (The 3550 ones are the earlier switch's pod, refused while it started.)
    assert any(":8080/healthz" in m and "8080: connect: connection refused" in m for m in refused)
    lab.kubectl("rollout", "undo", "deployment/product-catalog")
    _fixed(lab, injection, "product-catalog")
    probe = lab.world.api.get("Deployment", SHOP, "product-catalog")["spec"]["template"]["spec"][  # type: ignore[index]
        "containers"
    ][0]["readinessProbe"]
    assert probe["httpGet"]["port"] == 3550
