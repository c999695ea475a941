"""Faults outside the Kubernetes spec: revoked database roles, network delay and loss (data
plane: kubectl cannot heal them, the oracle fails until the data plane is restored or the time
bound passes), pod failure (chaos-mesh style, healed early by deleting the failed pods), and the
no-fault control."""

from __future__ import annotations

from collections.abc import Callable

from lab.faults import Injection, fault
from lab.faults.podfailure import PAUSE_IMAGE
from tests.lab.faults.conftest import HOTEL, SHOP, Lab, error_ratio, healthy

MakeLab = Callable[..., Lab]


def _ns(lab: Lab) -> str:
    return f'namespace="{lab.namespace}"'


def _restart_everything_kubectl_can(lab: Lab, *deployments: str) -> None:
    for name in deployments:
        lab.kubectl("rollout", "restart", f"deployment/{name}")
    lab.advance(40)


def test_revoked_db_credentials_need_the_data_plane(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = fault("revoked-db-credentials").inject(lab.world, app=HOTEL)
    assert injection.params == {"user": "geo_svc", "roles": "readWrite"}
    assert injection.truth.root_causes == ("mongodb-geo",)
    assert str(injection.truth.category) == "application/authentication"
    assert injection.truth.undoable_fix is False
    lab.advance(10)
    assert all(cs["ready"] and cs["restartCount"] == 0 for cs in lab.container_states("geo"))
    assert 'not authorized on geo-db to execute command { find: "geo"' in lab.logs("geo")
    assert error_ratio(lab, "mongodb-geo") == 1.0
    assert error_ratio(lab, "geo") == 1.0

    # Everything kubectl can do: restart the clients and the database. The user stays revoked.
    _restart_everything_kubectl_can(lab, "geo", "mongodb-geo")
    verdict = lab.check(injection)
    assert not verdict.mitigated
    assert "database user geo_svc on mongodb-geo still has no roles" in verdict.problems
    assert any("geo:" in p and "fail" in p for p in verdict.problems), verdict.problems
    assert error_ratio(lab, "geo") == 1.0

    # The data-plane fix (a DBA granting the roles back) heals it.
    assert fault(injection.fault_id).recover(lab.world, injection) == (
        "database mongodb-geo: granted geo_svc roles readWrite",
    )
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    healthy(lab, "geo", "mongodb-geo")


def _expires(lab: Lab, injection: Injection) -> None:
    """kubectl cannot heal a network fault; it heals when its time is up."""
    _restart_everything_kubectl_can(lab, injection.target)
    verdict = lab.check(injection)
    assert not verdict.mitigated
    assert any("still in force" in p for p in verdict.problems), verdict.problems
    assert injection.expires_at is not None
    remaining = (injection.expires_at - lab.world.clock.now()).total_seconds()
    assert remaining > 0
    lab.advance(remaining + 1)
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems


def test_network_delay_until_it_expires(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = fault("network-delay").inject(lab.world, app=HOTEL, params={"duration_s": 90})
    assert injection.target == "rate" and injection.params["delay_ms"] == 600
    assert str(injection.truth.category) == "virtualization/network"
    lab.advance(10)
    assert all(cs["ready"] for cs in lab.container_states("rate"))
    p99 = lab.metric(
        "histogram_quantile(0.99, sum by (service, le) (rate("
        f'http_server_request_duration_seconds_bucket{{{_ns(lab)},service="search"}}[10s])))'
    )
    assert p99["search"] > 0.6  # seconds: the delay on every call to rate
    assert "context deadline exceeded" in lab.logs("search")
    _expires(lab, injection)
    healthy(lab, "rate", "search")


def test_network_loss_until_it_expires(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = fault("network-loss").inject(lab.world, app=SHOP, params={"duration_s": 90})
    assert injection.target == "product-catalog"
    lab.advance(10)
    lost = lab.metric(
        f'sum by (peer) (rate(http_client_requests_total{{{_ns(lab)},peer="product-catalog",'
        'code="504"}[10s]))'
    )
    assert lost and next(iter(lost.values())) > 1.0
    assert error_ratio(lab, "frontend") > 0.05
    assert "context deadline exceeded" in lab.logs("frontend")
    _expires(lab, injection)
    healthy(lab, "product-catalog", "frontend")


def test_pod_failure_healed_early_by_deleting_the_pods(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = fault("pod-failure").inject(lab.world, app=HOTEL, params={"duration_s": 300})
    failed = [line.split(":")[0].removeprefix("Pod/") for line in injection.changes]
    assert failed and all(name.startswith("geo-") for name in failed)
    lab.advance(10)
    pod = lab.world.api.get("Pod", HOTEL, failed[0])
    assert pod is not None and pod["spec"]["containers"][0]["image"] == PAUSE_IMAGE
    states = lab.container_states("geo")
    assert states and not any(cs["ready"] for cs in states), states
    assert any(r in ("Killing", "BackOff", "Failed") for r, _ in lab.events(failed[0]))
    not_ready = lab.metric(f'kube_pod_status_ready{{{_ns(lab)},condition="false"}} == 1')
    assert failed[0] in not_ready, not_ready
    assert error_ratio(lab, "search") > 0.9
    assert "connection refused" in lab.logs("search")

    lab.kubectl("delete", "pod", *failed, "--wait=false")
    verdict = lab.settle(injection, within_s=120)
    assert verdict.mitigated, verdict.problems
    healthy(lab, "geo", "search")
    assert lab.world.clock.now() < injection.expires_at  # type: ignore[operator]


def test_pod_failure_ends_by_itself(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL, kubectl=False)
    injection = fault("pod-failure").inject(lab.world, app=HOTEL, params={"duration_s": 20})
    lab.advance(10)
    assert not lab.check(injection).mitigated
    lab.advance(15)
    images = {c["image"] for p in lab.pods("geo") for c in p["spec"]["containers"]}
    assert images == {"ghcr.io/lab/hotel/hotelreservation:1.0"}
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems


def test_no_fault_control(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP, kubectl=False)
    injection = fault("no-fault").inject(lab.world)
    assert injection.truth.expects_incident is False
    assert injection.truth.root_causes == () and injection.truth.category is None
    assert lab.check(injection).mitigated
    lab.advance(10)
    assert lab.check(injection).mitigated
    healthy(lab, "frontend-proxy", "frontend", "cart")
