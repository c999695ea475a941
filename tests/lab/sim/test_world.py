"""The simulator on the real emulated cluster (`lab.kube`), composed by `LabWorld`: the apps
come up healthy, and symptoms follow what is done through the cluster API."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.sim.world import LabWorld, WorldConfig

HOTEL = "hotel-reservation"
SHOP = "online-shop"


@pytest.fixture(scope="module")
def hotel() -> Iterator[LabWorld]:
    with LabWorld(WorldConfig(apps=(HOTEL,), seed=0)) as world:
        world.wait_healthy(timeout_s=120)
        yield world


def _world(*apps: str, seed: int = 0) -> LabWorld:
    world = LabWorld(WorldConfig(apps=apps, seed=seed)).start()
    world.wait_healthy(timeout_s=120)
    return world


def _logs(world: LabWorld, namespace: str, workload: str) -> str:
    out = []
    for pod in world.api.list("Pod", namespace):
        if not pod["metadata"]["name"].startswith(f"{workload}-"):
            continue
        for container in pod["spec"]["containers"]:
            for previous in (False, True):
                out.extend(
                    line
                    for _, line in world.cluster.logs.lines(
                        pod["metadata"]["uid"], container["name"], previous=previous
                    )
                )
    return "\n".join(out)


def _patch(
    world: LabWorld, kind: str, ns: str, name: str, body: Any, patch_type: str = "merge"
) -> None:
    world.api.patch(kind, ns, name, body, patch_type=patch_type, field_manager="test")  # type: ignore[arg-type]


def _restart(world: LabWorld, ns: str, name: str, stamp: str) -> None:
    _patch(
        world,
        "Deployment",
        ns,
        name,
        {
            "spec": {
                "template": {
                    "metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": stamp}}
                }
            }
        },
    )


def test_hotel_is_healthy_with_zero_errors_for_minutes(hotel: LabWorld) -> None:
    for _ in range(6):
        hotel.advance(30)
        snap = hotel.snapshot(HOTEL)
        assert snap.error_ratio == 0.0
        assert all(p.ready and p.restarts == 0 for p in snap.pods.values())
    signals = hotel.metrics.golden_signals(HOTEL)
    assert signals["frontend"].request_rate > 30
    assert all(s.error_ratio == 0.0 for s in signals.values())


def test_wrong_target_port_through_the_api_then_any_fix_heals(hotel: LabWorld) -> None:
    original = hotel.api.get("Service", HOTEL, "geo")
    assert original is not None
    _patch(
        hotel,
        "Service",
        HOTEL,
        "geo",
        [{"op": "replace", "path": "/spec/ports/0/targetPort", "value": 9999}],
        "json",
    )
    hotel.advance(5)
    snap = hotel.snapshot(HOTEL)
    assert snap.services["geo"].error_ratio == 1.0
    assert ":9999: connect: connection refused" in _logs(hotel, HOTEL, "search")
    fixed = hotel.api.get("Service", HOTEL, "geo")
    assert fixed is not None
    fixed["spec"]["ports"][0]["targetPort"] = 8083
    hotel.api.replace(fixed, field_manager="test")
    hotel.advance(5)
    assert hotel.snapshot(HOTEL).error_ratio == 0.0


def test_scale_to_zero_and_back(hotel: LabWorld) -> None:
    _patch(hotel, "Deployment", HOTEL, "rate", {"spec": {"replicas": 0}})
    hotel.advance(10)
    assert hotel.snapshot(HOTEL).services["rate"].error_ratio == 1.0
    _patch(hotel, "Deployment", HOTEL, "rate", {"spec": {"replicas": 1}})
    hotel.advance(20)
    assert hotel.snapshot(HOTEL).error_ratio == 0.0


def test_wrong_mongo_host_and_a_restart_crash_loops(hotel: LabWorld) -> None:
    _patch(
        hotel,
        "ConfigMap",
        HOTEL,
        "hotel-config",
        {"data": {"PROFILE_MONGO_ADDR": "mongodb-profiles:27017"}},
    )
    hotel.advance(5)
    assert hotel.snapshot(HOTEL).error_ratio == 0.0
    _restart(hotel, HOTEL, "profile", "2026-01-05T10:00:00Z")
    hotel.advance(40)
    snap = hotel.snapshot(HOTEL)
    profile = [p for p in snap.pods.values() if p.workload == "profile"]
    assert any(p.waiting_reason == "CrashLoopBackOff" for p in profile), profile
    assert "panic: no reachable servers" in _logs(hotel, HOTEL, "profile")
    _patch(
        hotel,
        "ConfigMap",
        HOTEL,
        "hotel-config",
        {"data": {"PROFILE_MONGO_ADDR": "mongodb-profile:27017"}},
    )
    _restart(hotel, HOTEL, "profile", "2026-01-05T10:05:00Z")
    hotel.wait_healthy(timeout_s=120)
    assert hotel.snapshot(HOTEL).error_ratio == 0.0


def test_revoked_roles_need_a_data_plane_fix(hotel: LabWorld) -> None:
    hotel.dataplane.revoke_roles(HOTEL, "mongodb-user", "user_svc")
    hotel.advance(3)
    assert hotel.snapshot(HOTEL).services["user"].server_error_ratio == 1.0
    _restart(hotel, HOTEL, "user", "2026-01-05T11:00:00Z")
    hotel.advance(30)
    assert hotel.snapshot(HOTEL).services["user"].server_error_ratio == 1.0
    assert "not authorized on user-db" in _logs(hotel, HOTEL, "user")
    hotel.dataplane.grant_roles(HOTEL, "mongodb-user", "user_svc", ["readWrite"])
    hotel.advance(3)
    assert hotel.snapshot(HOTEL).error_ratio == 0.0


def test_memory_and_cpu_limits(hotel: LabWorld) -> None:
    container = {
        "name": "hotel-reserv-geo",
        "resources": {"limits": {"cpu": "2m"}, "requests": {"cpu": "2m"}},
    }
    _patch(
        hotel,
        "Deployment",
        HOTEL,
        "geo",
        {"spec": {"template": {"spec": {"containers": [container]}}}},
        "strategic",
    )
    hotel.advance(30)
    snap = hotel.snapshot(HOTEL)
    assert snap.services["geo"].latency_p99_ms > 100
    mem = {
        "name": "hotel-reserv-mmc",
        "resources": {"limits": {"memory": "16Mi"}, "requests": {"memory": "16Mi"}},
    }
    mem["name"] = "hotel-reserv-rate-mmc"
    _patch(
        hotel,
        "Deployment",
        HOTEL,
        "memcached-rate",
        {"spec": {"template": {"spec": {"containers": [mem]}}}},
        "strategic",
    )
    hotel.advance(60)
    pod = next(p for p in hotel.snapshot(HOTEL).pods.values() if p.workload == "memcached-rate")
    assert pod.last_terminated_reason == "OOMKilled"


def test_flag_on_and_off_through_the_configmap() -> None:
    world = _world(SHOP)
    try:
        cm = world.api.get("ConfigMap", SHOP, "flagd-config")
        assert cm is not None
        doc = json.loads(cm["data"]["demo.flagd.json"])
        doc["flags"]["productCatalogFailure"]["defaultVariant"] = "on"
        _patch(
            world, "ConfigMap", SHOP, "flagd-config", {"data": {"demo.flagd.json": json.dumps(doc)}}
        )
        world.advance(1)
        assert world.snapshot(SHOP).services["product-catalog"].server_error_ratio == pytest.approx(
            0.1
        )
        doc["flags"]["productCatalogFailure"]["defaultVariant"] = "off"
        _patch(
            world, "ConfigMap", SHOP, "flagd-config", {"data": {"demo.flagd.json": json.dumps(doc)}}
        )
        world.advance(1)
        assert world.snapshot(SHOP).error_ratio == 0.0
    finally:
        world.stop()


def test_same_seed_same_metrics() -> None:
    def run() -> dict[Any, float]:
        world = LabWorld(WorldConfig(apps=(HOTEL,), seed=3)).start()
        try:
            world.advance(60)
            return dict(world.sim.store.live)
        finally:
            world.stop()

    assert run() == run()


def test_served_api_exporter_and_kubeconfig(tmp_path: Path) -> None:
    config = WorldConfig(
        apps=(HOTEL,), serve_api=True, serve_metrics=True, kubeconfig=tmp_path / "kubeconfig"
    )
    with LabWorld(config) as world:
        world.advance(20)
        assert world.kubeconfig_path is not None and world.kubeconfig_path.exists()
        assert world.api_url and world.metrics_url
        with urllib.request.urlopen(f"{world.metrics_url}/metrics", timeout=5) as response:
            text = response.read().decode()
        assert (
            'http_server_requests_total{code="200",namespace="hotel-reservation",service="frontend"}'
            in text
        )
        with urllib.request.urlopen(
            f"{world.api_url}/api/v1/namespaces/{HOTEL}/pods", timeout=5
        ) as response:
            pods = json.loads(response.read())
        assert len(pods["items"]) == 18


def test_running_mode_ticks_on_its_own() -> None:
    # Lab time runs 50× faster than the wall clock; every wait below is in lab time.
    with LabWorld(WorldConfig(apps=(HOTEL,), stepped=False, speed=50.0)) as world:
        world.wait_healthy(timeout_s=300)
        world.advance(20)
        snap = world.snapshot(HOTEL)
        assert snap.entry_rps > 0
        assert snap.error_ratio == 0.0
        assert world.metrics.golden_signals(HOTEL)["frontend"].request_rate > 0
