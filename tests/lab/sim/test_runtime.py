"""`SimRuntime` answers the kubelet from the registry, the Pod spec and the cluster objects."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

import pytest

from lab.apps import load_app
from lab.clock import LAB_EPOCH
from lab.sim.images import ImageSpec, parse_image
from lab.sim.logs import record
from lab.sim.model import Wire
from lab.sim.runtime import SimRuntime
from tests.lab.sim.fakecluster import FakeCluster

HOTEL = "hotel-reservation"


@pytest.fixture
def env() -> tuple[SimRuntime, FakeCluster, dict[str, Any]]:
    bundle = load_app(HOTEL)
    runtime = SimRuntime(models=[bundle.model])
    cluster = FakeCluster(runtime)
    runtime.attach(cluster)
    cluster.apply(list(bundle.manifests))
    dep = next(d for d in bundle.objects("Deployment") if d["metadata"]["name"] == "geo")
    pod = {
        "metadata": {
            "name": "geo-1",
            "namespace": HOTEL,
            "uid": "u1",
            "labels": dict(dep["spec"]["template"]["metadata"]["labels"]),
        },
        "spec": copy.deepcopy(dep["spec"]["template"]["spec"]),
        "status": {"podIP": "10.244.0.9"},
    }
    return runtime, cluster, pod


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = pod["spec"]["containers"][0]
    return container


def test_pull_knows_the_registry() -> None:
    runtime = SimRuntime(models=[load_app(HOTEL).model])
    assert runtime.pull("ghcr.io/lab/hotel/hotelreservation:1.0").ok
    assert runtime.pull("docker.io/library/mongo:4.4.6").ok
    missing = runtime.pull("mongo:9.9")
    assert not missing.ok
    ref = "docker.io/library/mongo:9.9"
    assert missing.message == (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
        f'failed to resolve reference "{ref}": {ref}: not found'
    )
    assert parse_image("localhost:5000/x/y").tag == "latest"


def test_a_healthy_start_reads_env_and_becomes_ready_after_startup(
    env: tuple[SimRuntime, FakeCluster, dict[str, Any]],
) -> None:
    runtime, _, pod = env
    result = runtime.start(pod, _container(pod), LAB_EPOCH)
    assert result.running
    assert any("Read database URL: mongodb-geo:27017" in line for line in result.log_lines)
    proc = runtime.process("u1", "hotel-reserv-geo")
    assert proc is not None
    assert proc.env["DB_PASSWORD"] == "geo-pw-14x"  # decoded from the Secret
    assert proc.port == 8083
    assert not runtime.health(pod, _container(pod), LAB_EPOCH).ready
    health = runtime.health(pod, _container(pod), LAB_EPOCH + timedelta(seconds=2))
    assert health.ready
    assert 0 < health.memory_bytes < 256 * 2**20


def test_command_naming_a_missing_binary_cannot_start(
    env: tuple[SimRuntime, FakeCluster, dict[str, Any]],
) -> None:
    runtime, _, pod = env
    _container(pod)["command"] = ["/bin/geo"]
    result = runtime.start(pod, _container(pod), LAB_EPOCH)
    assert not result.running
    assert result.exit_code == 128
    assert result.reason == "StartError"
    assert 'exec: "/bin/geo": stat /bin/geo: no such file or directory' in result.message
    _container(pod)["command"] = ["geo-server"]
    assert (
        "executable file not found in $PATH"
        in runtime.start(pod, _container(pod), LAB_EPOCH).message
    )


def test_mongo_host_with_no_service_panics(
    env: tuple[SimRuntime, FakeCluster, dict[str, Any]],
) -> None:
    runtime, cluster, pod = env
    cluster.mutate(
        "ConfigMap",
        HOTEL,
        "hotel-config",
        lambda cm: cm["data"].__setitem__("GEO_MONGO_ADDR", "mongo-geo:27017"),
    )
    result = runtime.start(pod, _container(pod), LAB_EPOCH)
    assert not result.running
    assert result.exit_code == 2
    assert "panic: no reachable servers" in result.log_lines
    assert runtime.process("u1", "hotel-reserv-geo") is None


def test_missing_configmap_key_is_a_config_error(
    env: tuple[SimRuntime, FakeCluster, dict[str, Any]],
) -> None:
    runtime, cluster, pod = env
    cluster.mutate("ConfigMap", HOTEL, "hotel-config", lambda cm: cm["data"].pop("GEO_MONGO_USER"))
    result = runtime.start(pod, _container(pod), LAB_EPOCH)
    assert result.reason == "CreateContainerConfigError"
    assert result.message == f"couldn't find key GEO_MONGO_USER in ConfigMap {HOTEL}/hotel-config"
    cluster.delete("Secret", HOTEL, "mongodb-credentials")
    cluster.mutate(
        "ConfigMap",
        HOTEL,
        "hotel-config",
        lambda cm: cm["data"].__setitem__("GEO_MONGO_USER", "geo_svc"),
    )
    assert (
        runtime.start(pod, _container(pod), LAB_EPOCH).message
        == 'secret "mongodb-credentials" not found'
    )


def test_bad_build_panics_with_a_go_stack_trace(
    env: tuple[SimRuntime, FakeCluster, dict[str, Any]],
) -> None:
    runtime, _, pod = env
    _container(pod)["image"] = "ghcr.io/lab/hotel/hotelreservation:1.2-rc1"
    result = runtime.start(pod, _container(pod), LAB_EPOCH)
    assert (result.running, result.exit_code, result.reason) == (False, 2, "Error")
    assert (
        "panic: runtime error: invalid memory address or nil pointer dereference"
        in result.log_lines
    )
    assert "goroutine 1 [running]:" in result.log_lines
    runtime.registry.push(
        "ghcr.io/lab/hotel/hotelreservation:1.3",
        ImageSpec(binaries=frozenset({"/go/bin/geo"}), path=("/go/bin",)),
    )
    _container(pod)["image"] = "ghcr.io/lab/hotel/hotelreservation:1.3"
    assert runtime.start(pod, _container(pod), LAB_EPOCH).running


def test_readiness_probe_on_a_port_nobody_listens_on_never_passes(
    env: tuple[SimRuntime, FakeCluster, dict[str, Any]],
) -> None:
    runtime, _, pod = env
    _container(pod)["readinessProbe"] = {"tcpSocket": {"port": 9000}}
    assert runtime.start(pod, _container(pod), LAB_EPOCH).running
    assert not runtime.health(pod, _container(pod), LAB_EPOCH + timedelta(minutes=5)).ready


def test_a_shell_with_nothing_to_serve_completes(
    env: tuple[SimRuntime, FakeCluster, dict[str, Any]],
) -> None:
    runtime, _, pod = env
    _container(pod)["command"] = ["/bin/sh"]
    result = runtime.start(pod, _container(pod), LAB_EPOCH)
    assert (result.running, result.reason, result.exit_code) == (False, "Completed", 0)


def test_health_of_an_unknown_container_is_not_ready(
    env: tuple[SimRuntime, FakeCluster, dict[str, Any]],
) -> None:
    runtime, _, pod = env
    assert not runtime.health(pod, _container(pod), LAB_EPOCH).ready


def test_a_service_writes_a_multi_line_message_to_its_log(
    env: tuple[SimRuntime, FakeCluster, dict[str, Any]],
) -> None:
    runtime, _, pod = env
    assert runtime.start(pod, _container(pod), LAB_EPOCH).running
    later = LAB_EPOCH + timedelta(seconds=3)
    assert runtime.write_log(HOTEL, "geo", "config dump:\nkey=a\nend", level="ERROR", now=later)
    assert runtime.write_log(HOTEL, "search", "not geo", level="ERROR", now=later) == 0
    lines = runtime.health(pod, _container(pod), later).new_log_lines
    assert lines == ("2026-01-05T09:00:03.000Z ERR cmd/geo/main.go > config dump:", "key=a", "end")
    assert runtime.health(pod, _container(pod), later).new_log_lines == ()


def test_a_json_logging_program_keeps_a_multi_line_message_on_one_line() -> None:
    (only,) = record(LAB_EPOCH, Wire.MONGODB, "ERROR", 'a "b"\nc\\d')
    assert json.loads(only)["msg"] == 'a "b"\nc\\d'
