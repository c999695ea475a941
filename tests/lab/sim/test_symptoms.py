"""Symptoms derive from the cluster's state through the model: break something any way, the
callers see it as it would look on the wire; put it back any way, it heals."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.lab.sim.harness import FakeLab

HOTEL = "hotel-reservation"
SHOP = "online-shop"


@pytest.fixture(scope="module")
def healthy_hotel() -> FakeLab:
    lab = FakeLab(HOTEL)
    lab.step(60)
    return lab


def _fresh(*apps: str) -> FakeLab:
    lab = FakeLab(*apps)
    lab.step(40)
    assert lab.snap(apps[0]).error_ratio == 0.0
    return lab


def test_apps_reach_steady_state_with_zero_errors() -> None:
    lab = FakeLab(HOTEL, SHOP)
    lab.step(40)
    for ns in (HOTEL, SHOP):
        start = lab.snap(ns)
        assert all(p.ready for p in start.pods.values()), ns
        assert all(p.restarts == 0 for p in start.pods.values()), ns
    for _ in range(6):  # three more minutes, checked every 30 s
        lab.step(30)
        for ns in (HOTEL, SHOP):
            snap = lab.snap(ns)
            assert snap.error_ratio == 0.0, (
                ns,
                {s: v.error_ratio for s, v in snap.services.items() if v.error_ratio},
            )
            assert snap.entry_rps > 0
            slo = {HOTEL: 500.0, SHOP: 800.0}[ns]
            assert max(s.latency_p99_ms for s in snap.services.values()) < slo
            assert all(p.throttle == 1.0 for p in snap.pods.values())
            assert all(
                p.memory_bytes < (p.memory_limit_bytes or 1 << 62) / 2 for p in snap.pods.values()
            )


def _set_target_port(lab: FakeLab, ns: str, svc: str, port: int) -> None:
    def change(obj: dict[str, Any]) -> None:
        obj["spec"]["ports"][0]["targetPort"] = port

    lab.cluster.mutate("Service", ns, svc, change)


def test_wrong_target_port_refuses_connections_and_any_fix_heals() -> None:
    lab = _fresh(HOTEL)
    original = copy.deepcopy(lab.cluster.get("Service", HOTEL, "geo"))
    _set_target_port(lab, HOTEL, "geo", 9999)
    lab.step(5)
    snap = lab.snap(HOTEL)
    assert snap.services["geo"].error_ratio == 1.0
    assert snap.services["geo"].served_rate == 0.0  # nothing reaches geo's pods
    assert snap.services["search"].server_error_ratio == 1.0
    assert 0.5 < snap.services["frontend"].server_error_ratio < 0.7  # 60 % of requests search
    geo_pod = lab.pods(HOTEL, "geo")[0]
    logs = "\n".join(lab.logs(HOTEL, "search"))
    assert f"dial tcp {geo_pod['status']['podIP']}:9999: connect: connection refused" in logs
    assert "rpc error: code = Unavailable" in logs
    assert all(p.ready for p in snap.pods.values())  # callers error, nobody goes unready

    # Fix it another way than the break: replace the whole Service with the original.
    assert original is not None
    lab.cluster.put(original)
    lab.step(3)
    assert lab.snap(HOTEL).error_ratio == 0.0


def test_named_target_port_that_matches_no_container_port_leaves_no_endpoints() -> None:
    lab = _fresh(HOTEL)
    _set_target_port(lab, HOTEL, "rate", "grpc")  # type: ignore[arg-type]
    lab.step(3)
    snap = lab.snap(HOTEL)
    assert snap.services["rate"].error_ratio == 1.0
    logs = "\n".join(lab.logs(HOTEL, "search"))
    svc = lab.cluster.get("Service", HOTEL, "rate")
    assert svc is not None
    assert f"dial tcp {svc['spec']['clusterIP']}:8084: connect: connection refused" in logs


def test_scale_to_zero_breaks_callers_and_scaling_back_heals() -> None:
    lab = _fresh(HOTEL)

    def scale(n: int) -> None:
        lab.cluster.mutate(
            "Deployment", HOTEL, "profile", lambda d: d["spec"].__setitem__("replicas", n)
        )

    scale(0)
    lab.step(3)
    snap = lab.snap(HOTEL)
    assert snap.services["profile"].error_ratio == 1.0
    assert snap.services["frontend"].server_error_ratio > 0.9
    assert "profile" not in {p.workload for p in snap.pods.values()}
    scale(1)
    lab.step(10)
    assert lab.snap(HOTEL).error_ratio == 0.0


def test_deleting_a_service_is_a_dns_failure() -> None:
    lab = _fresh(HOTEL)
    lab.cluster.delete("Service", HOTEL, "user")
    lab.step(2)
    snap = lab.snap(HOTEL)
    assert snap.services["user"].error_ratio == 1.0
    assert "lookup user on 10.96.0.10:53: no such host" in "\n".join(lab.logs(HOTEL, "frontend"))


def _set_flag(lab: FakeLab, flag: str, variant: str) -> None:
    import json

    def change(cm: dict[str, Any]) -> None:
        doc = json.loads(cm["data"]["demo.flagd.json"])
        doc["flags"][flag]["defaultVariant"] = variant
        cm["data"]["demo.flagd.json"] = json.dumps(doc)

    lab.cluster.mutate("ConfigMap", SHOP, "flagd-config", change)


def test_flag_turns_failure_on_at_once_and_off_heals() -> None:
    lab = _fresh(SHOP)
    _set_flag(lab, "cartFailure", "on")
    lab.step(1)  # the very next tick fails (the kubelet collects its log lines one tick later)
    snap = lab.snap(SHOP)
    assert snap.services["cart"].server_error_ratio == 1.0
    assert snap.services["frontend"].server_error_ratio > 0.2
    lab.step(1)
    assert "Wasn't able to connect to redis" in "\n".join(lab.logs(SHOP, "cart"))
    assert all(p.restarts == 0 for p in snap.pods.values())  # no restart was needed
    _set_flag(lab, "cartFailure", "off")
    lab.step(1)
    assert lab.snap(SHOP).error_ratio == 0.0


def test_numeric_flag_variant_is_a_failure_ratio() -> None:
    lab = _fresh(SHOP)
    _set_flag(lab, "paymentFailure", "50%")
    lab.step(2)
    assert lab.snap(SHOP).services["payment"].server_error_ratio == pytest.approx(0.5)


def test_flags_read_their_defaults_when_flagd_is_down() -> None:
    lab = _fresh(SHOP)
    _set_flag(lab, "cartFailure", "on")
    lab.cluster.mutate("Deployment", SHOP, "flagd", lambda d: d["spec"].__setitem__("replicas", 0))
    lab.step(3)
    assert lab.snap(SHOP).services["cart"].server_error_ratio == 0.0


def _set_config(lab: FakeLab, key: str, value: str) -> None:
    lab.cluster.mutate(
        "ConfigMap", HOTEL, "hotel-config", lambda cm: cm["data"].__setitem__(key, value)
    )


def test_wrong_mongo_host_matters_only_after_a_restart_then_crash_loops() -> None:
    lab = _fresh(HOTEL)
    _set_config(lab, "GEO_MONGO_ADDR", "mongodb-geo-primary:27017")
    lab.step(10)
    assert lab.snap(HOTEL).error_ratio == 0.0  # env was read at start: nothing changes yet
    lab.cluster.restart(HOTEL, "geo")
    lab.step(5)
    snap = lab.snap(HOTEL)
    geo = [p for p in snap.pods.values() if p.workload == "geo"]
    assert geo and geo[0].waiting_reason == "CrashLoopBackOff"
    assert geo[0].last_terminated_reason == "Error"
    assert "panic: no reachable servers" in "\n".join(lab.logs(HOTEL, "geo"))
    assert snap.services["geo"].error_ratio == 1.0
    _set_config(lab, "GEO_MONGO_ADDR", "mongodb-geo:27017")
    lab.cluster.restart(HOTEL, "geo")
    lab.step(5)
    assert lab.snap(HOTEL).error_ratio == 0.0


def test_revoked_roles_are_not_authorized_and_no_kubernetes_change_fixes_it() -> None:
    lab = _fresh(HOTEL)
    lab.sim.dataplane.revoke_roles(HOTEL, "mongodb-geo", "geo_svc")
    lab.step(2)
    snap = lab.snap(HOTEL)
    assert snap.services["mongodb-geo"].server_error_ratio == 1.0
    assert snap.services["geo"].server_error_ratio == 1.0
    text = 'not authorized on geo-db to execute command { find: "geo", filter: {}, $db: "geo-db" }'
    assert text in "\n".join(lab.logs(HOTEL, "geo"))
    assert text in "\n".join(lab.logs(HOTEL, "search"))
    for workload in ("geo", "mongodb-geo"):
        lab.cluster.restart(HOTEL, workload)
    lab.step(20)
    assert lab.snap(HOTEL).services["geo"].server_error_ratio == 1.0
    lab.sim.dataplane.grant_roles(HOTEL, "mongodb-geo", "geo_svc", ["readWrite"])
    lab.step(1)
    assert lab.snap(HOTEL).error_ratio == 0.0


def test_memory_limit_below_demand_is_oom_killed() -> None:
    lab = _fresh(HOTEL)

    def shrink(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "32Mi"

    lab.cluster.mutate("Deployment", HOTEL, "mongodb-rate", shrink)
    lab.step(30)
    pod = next(p for p in lab.snap(HOTEL).pods.values() if p.workload == "mongodb-rate")
    assert pod.last_terminated_reason == "OOMKilled"
    assert pod.restarts >= 1


def test_cpu_limit_far_below_demand_raises_latency_and_times_out_callers() -> None:
    lab = _fresh(HOTEL)
    before = lab.snap(HOTEL).services["geo"].latency_p99_ms

    def starve(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "1m"

    lab.cluster.mutate("Deployment", HOTEL, "geo", starve)
    lab.step(15)
    snap = lab.snap(HOTEL)
    geo = next(p for p in snap.pods.values() if p.workload == "geo")
    assert geo.throttle > 10
    assert snap.services["geo"].latency_p99_ms > 10 * before
    assert snap.services["geo"].codes.get(504, 0.0) > 0  # search's deadline is exceeded
    assert "context deadline exceeded" in "\n".join(lab.logs(HOTEL, "search"))


def test_network_loss_is_time_bounded() -> None:
    lab = _fresh(HOTEL)
    from datetime import timedelta

    lab.sim.dataplane.set_network(
        HOTEL, "rate", delay_ms=5, loss=0.5, until=lab.now + timedelta(seconds=10)
    )
    lab.step(2)
    snap = lab.snap(HOTEL)
    assert snap.services["rate"].error_ratio == pytest.approx(0.5, abs=0.01)
    assert snap.services["rate"].codes[504] > 0
    lab.step(10)
    assert lab.snap(HOTEL).error_ratio == 0.0


def test_unknown_image_and_missing_binary() -> None:
    lab = _fresh(HOTEL)

    def image(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["image"] = (
            "ghcr.io/lab/hotel/hotelreservation:9.9"
        )

    lab.cluster.mutate("Deployment", HOTEL, "user", image)

    def command(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["command"] = ["/bin/recommend"]

    lab.cluster.mutate("Deployment", HOTEL, "recommendation", command)
    lab.step(5)
    snap = lab.snap(HOTEL)
    user = next(p for p in snap.pods.values() if p.workload == "user")
    rec = next(p for p in snap.pods.values() if p.workload == "recommendation")
    assert user.waiting_reason == "ImagePullBackOff"
    assert rec.last_terminated_reason == "StartError"
    assert snap.services["recommendation"].error_ratio == 1.0


def test_same_seed_gives_identical_metrics() -> None:
    def run() -> dict[Any, float]:
        lab = FakeLab(HOTEL, seed=7)
        lab.step(30)
        lab.sim.dataplane.set_network(HOTEL, "geo", delay_ms=300, loss=0.1)
        lab.step(30)
        return dict(lab.sim.store.live)

    first, second = run(), run()
    assert first == second
    other = FakeLab(HOTEL, seed=8)
    other.step(60)
    assert dict(other.sim.store.live) != first


def test_a_process_listening_elsewhere_refuses_what_the_service_sends() -> None:
    lab = _fresh(SHOP)

    def port(dep: dict[str, Any]) -> None:
        env = dep["spec"]["template"]["spec"]["containers"][0]["env"]
        next(e for e in env if e["name"] == "CART_PORT")["value"] = "7071"

    lab.cluster.mutate("Deployment", SHOP, "cart", port)  # a new pod reads the new env
    lab.step(10)
    snap = lab.snap(SHOP)
    cart = next(p for p in snap.pods.values() if p.workload == "cart")
    assert not cart.ready  # its readiness probe checks 7070, where nothing listens now
    assert snap.services["cart"].error_ratio == 1.0


def test_a_node_that_stops_answering_times_out_its_pods() -> None:
    lab = _fresh(HOTEL)
    geo = lab.pods(HOTEL, "geo")[0]
    node = geo["spec"]["nodeName"]
    lab.cluster.mutate(
        "Node", "", node, lambda n: n["status"]["conditions"][0].__setitem__("status", "Unknown")
    )
    lab.step(2)
    snap = lab.snap(HOTEL)
    # The fake scheduler put every single-replica pod (search too) on that node, and one of
    # the two frontends: the other frontend's calls to them time out.
    assert snap.services["search"].codes.get(504, 0.0) > 0
    assert (
        snap.services["frontend"].error_ratio > 0.9
    )  # profile, on that node too, is on every page
    assert "context deadline exceeded" in "\n".join(lab.logs(HOTEL, "frontend"))


def test_cache_flag_leaks_memory_until_the_kubelet_oom_kills() -> None:
    lab = _fresh(SHOP)
    start = next(p for p in lab.snap(SHOP).pods.values() if p.workload == "recommendation")
    _set_flag(lab, "recommendationCacheFailure", "on")
    lab.step(60)
    grown = next(p for p in lab.snap(SHOP).pods.values() if p.workload == "recommendation")
    assert grown.memory_bytes > start.memory_bytes + 50 * 2**20
    assert grown.restarts == 0
    lab.step(420)
    leaked = next(p for p in lab.snap(SHOP).pods.values() if p.workload == "recommendation")
    assert leaked.last_terminated_reason == "OOMKilled"
