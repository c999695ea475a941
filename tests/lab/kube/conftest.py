"""Fixtures for the lab cluster's conformance suite.

The suite talks to a cluster only through the official client and kubectl, so it runs
unchanged against a real cluster: set `STRATUS_TEST_KUBECONFIG` to a kubeconfig and the
`target` fixture points there instead of at the emulator. Every test works in its own
namespace and deletes it afterwards. Checks that rely on the emulator itself (its fake images,
its nodes) take the `lab` fixture, which skips on a real cluster.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client, config

from lab.clock import LabClock
from lab.kube.cluster import LabCluster
from tests.conftest import require_binary

T = TypeVar("T")

REAL_KUBECONFIG = os.environ.get("STRATUS_TEST_KUBECONFIG", "")

#: Lab seconds per wall second for the shared emulated cluster: back-offs of 10-40 lab
#: seconds pass in a second or two of wall time.
LAB_SPEED = 20.0


@dataclass
class Target:
    """The cluster under test: the emulator (with `cluster`) or a real one."""

    kubeconfig: Path
    api_client: client.ApiClient
    cluster: LabCluster | None
    cache_dir: Path

    @property
    def emulated(self) -> bool:
        return self.cluster is not None

    @property
    def timeout_s(self) -> float:
        """How long to wait for the cluster to converge (real clusters pull images)."""
        return 30.0 if self.emulated else 240.0


@pytest.fixture(scope="session")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    home = tmp_path_factory.mktemp("kube")
    if REAL_KUBECONFIG:
        kubeconfig, cluster = Path(REAL_KUBECONFIG), None
    else:
        cluster = LabCluster(clock=LabClock(speed=LAB_SPEED), seed=7)
        cluster.serve()
        cluster.start()
        kubeconfig = cluster.write_kubeconfig(home / "kubeconfig")
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    api_client = client.ApiClient(configuration)
    try:
        yield Target(
            kubeconfig=kubeconfig, api_client=api_client, cluster=cluster, cache_dir=home / "cache"
        )
    finally:
        api_client.close()
        if cluster is not None:
            cluster.stop()
            assert not cluster.running(), "the lab cluster's threads outlived stop()"


@pytest.fixture
def lab(target: Target) -> LabCluster:
    """The emulated cluster itself; skips the test on a real cluster."""
    if target.cluster is None:
        pytest.skip("relies on the emulator (its fake images or its nodes)")
    return target.cluster


@pytest.fixture
def core(target: Target) -> client.CoreV1Api:
    return client.CoreV1Api(target.api_client)


@pytest.fixture
def apps(target: Target) -> client.AppsV1Api:
    return client.AppsV1Api(target.api_client)


@pytest.fixture
def ns(target: Target, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.removeprefix("test_").lower())
    name = f"t-{stem[:40].strip('-')}-{uuid.uuid4().hex[:6]}"
    api = client.CoreV1Api(target.api_client)
    api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    # Controllers add kube-root-ca.crt to every new namespace; wait, so lists are stable.
    eventually(
        lambda: (
            api.list_namespaced_config_map(
                name, field_selector="metadata.name=kube-root-ca.crt"
            ).items
        ),
        timeout_s=target.timeout_s,
        what=f"namespace {name} to be populated",
    )
    try:
        yield name
    finally:
        api.delete_namespace(name)


class Kubectl:
    def __init__(self, binary: str, target: Target) -> None:
        self.binary = binary
        self.target = target

    def __call__(
        self, *args: str, check: bool = True, stdin: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        cmd = [
            self.binary,
            f"--kubeconfig={self.target.kubeconfig}",
            f"--cache-dir={self.target.cache_dir}",
            *args,
        ]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.target.cache_dir.parent),
        }
        result = subprocess.run(
            cmd, capture_output=True, text=True, input=stdin, env=env, timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result


@pytest.fixture
def kubectl(target: Target) -> Kubectl:
    return Kubectl(require_binary("kubectl"), target)


def eventually(check: Callable[[], T | None], *, timeout_s: float, what: str) -> T:
    """Poll `check` until it returns something truthy; fail saying `what` never happened.
    Polls fast at first (the emulator converges in milliseconds), then backs off."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    interval_s = 0.002
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval_s)
        interval_s = min(interval_s * 2, 0.1)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what} (last: {last!r})")


# --------------------------------------------------------------------------- manifests


def deployment(
    name: str,
    *,
    image: str = "nginx:1.25",
    replicas: int = 2,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    labels = labels or {"app": name}
    container: dict[str, Any] = {
        "name": "app",
        "image": image,
        "ports": [{"containerPort": 80, "name": "http"}],
    }
    container.update(spec.pop("container", {}))
    pod_spec = {"containers": [container], **spec.pop("pod", {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
            **spec,
        },
    }


def wait_rolled_out(apps: client.AppsV1Api, ns: str, name: str, timeout_s: float) -> Any:
    def done() -> Any:
        d = apps.read_namespaced_deployment(name, ns)
        status = d.status or client.V1DeploymentStatus()
        replicas = d.spec.replicas
        ok = (
            (status.observed_generation or 0) >= d.metadata.generation
            and (status.updated_replicas or 0) == replicas
            and (status.replicas or 0) == replicas
            and (status.available_replicas or 0) == replicas
        )
        return d if ok else None

    return eventually(done, timeout_s=timeout_s, what=f"deployment {ns}/{name} to roll out")


def events_for(core: client.CoreV1Api, ns: str, name: str) -> list[Any]:
    return list(core.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}").items)


def raw(
    target: Target,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> tuple[int, bytes]:
    """One HTTP request with the client's credentials, bypassing its body validation."""
    cfg = target.api_client.configuration
    headers = {"Content-Type": content_type, "Accept": accept}
    for setting in cfg.auth_settings().values():
        headers[setting["key"]] = setting["value"]
    response = target.api_client.rest_client.pool_manager.request(
        method, cfg.host + path, body=body, headers=headers, preload_content=True
    )
    return response.status, response.data
