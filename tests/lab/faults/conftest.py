"""A stepped lab served over HTTP, and kubectl pointed at it.

The world is stepped (deterministic): kubectl talks to the served API while lab time stands
still, and the test advances time between commands. Commands that would wait on the cluster
(`kubectl delete` waiting for a pod to vanish, `rollout status`) are run without waiting.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lab.faults import Injection, OracleVerdict, check_mitigation, fault
from lab.sim.world import LabWorld, WorldConfig
from tests.conftest import require_binary

HOTEL = "hotel-reservation"
SHOP = "online-shop"

#: Lab seconds of healthy history before a fault, so SLO windows start clean.
WARM_UP_S = 30.0


@dataclass
class Lab:
    world: LabWorld
    namespace: str
    kubeconfig: Path
    home: Path
    kubectl_binary: str | None = None

    # ------------------------------------------------------------------ driving

    def advance(self, seconds: float) -> None:
        self.world.advance(seconds)

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        """Run kubectl against the served API; fails the test when kubectl fails."""
        assert self.kubectl_binary is not None, "make_lab(app, kubectl=True) for kubectl"
        result = subprocess.run(
            [
                self.kubectl_binary,
                f"--kubeconfig={self.kubeconfig}",
                f"--cache-dir={self.home / 'cache'}",
                "-n",
                self.namespace,
                *args,
            ],
            capture_output=True,
            text=True,
            input=stdin,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)},
            timeout=60,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result.stdout

    def check(self, injection: Injection) -> OracleVerdict:
        return check_mitigation(self.world, injection)

    def settle(self, injection: Injection, *, within_s: float = 150.0) -> OracleVerdict:
        """Advance in 5-second steps until the oracle passes (or `within_s` runs out)."""
        waited = 0.0
        verdict = self.check(injection)
        while not verdict.mitigated and waited < within_s:
            self.advance(5)
            waited += 5
            verdict = self.check(injection)
        return verdict

    # ------------------------------------------------------------------ reading

    def pods(self, workload: str) -> list[dict[str, Any]]:
        return [
            p
            for p in self.world.api.list("Pod", self.namespace)
            if p["metadata"]["name"].startswith(f"{workload}-")
            and not p["metadata"].get("deletionTimestamp")
        ]

    def container_states(self, workload: str) -> list[dict[str, Any]]:
        return [
            cs
            for p in self.pods(workload)
            for cs in (p.get("status") or {}).get("containerStatuses") or []
        ]

    def events(self, name_prefix: str) -> list[tuple[str, str]]:
        """(reason, message) of events about objects whose name starts with the prefix."""
        return [
            (e["reason"], e["message"])
            for e in self.world.api.list("Event", self.namespace)
            if e["involvedObject"]["name"].startswith(name_prefix)
        ]

    def logs(self, workload: str, *, previous: bool = False) -> str:
        """The workload's container logs through the `pods/log` subresource."""
        out = []
        for pod in self.pods(workload):
            name = pod["metadata"]["name"]
            for container in pod["spec"]["containers"]:
                url = (
                    f"{self.world.api_url}/api/v1/namespaces/{self.namespace}/pods/{name}/log"
                    f"?container={container['name']}&previous={str(previous).lower()}"
                )
                try:
                    with urllib.request.urlopen(url, timeout=10) as response:
                        out.append(response.read().decode())
                except urllib.error.HTTPError as e:  # no such container instance: an answer
                    out.append(json.loads(e.read()).get("message", ""))
        return "\n".join(out)

    def metric(self, promql: str) -> dict[str, float]:
        """An instant query over the lab's telemetry: {pod or service or deployment: value}."""
        out = {}
        for series in self.world.metrics.query(promql):
            labels = series.labels
            key = labels.get("pod") or labels.get("service") or labels.get("deployment") or ""
            out[key] = series.points[-1].value
        return out

    def signals(self) -> dict[str, tuple[float, float]]:
        """Per service (client-seen error ratio, p99 ms) at the latest tick."""
        snap = self.world.snapshot(self.namespace)
        return {n: (s.error_ratio, s.latency_p99_ms) for n, s in snap.services.items()}


@pytest.fixture
def make_lab(tmp_path: Path) -> Iterator[Callable[..., Lab]]:
    worlds: list[LabWorld] = []

    def make(app: str, *, kubectl: bool = True) -> Lab:
        binary = require_binary("kubectl") if kubectl else None
        home = tmp_path / f"home-{len(worlds)}"
        home.mkdir()
        world = LabWorld(
            WorldConfig(apps=(app,), seed=0, serve_api=True, kubeconfig=home / "kubeconfig")
        ).start()
        worlds.append(world)
        world.wait_healthy(timeout_s=120)
        world.advance(WARM_UP_S)
        assert world.kubeconfig_path is not None
        return Lab(
            world=world,
            namespace=app,
            kubeconfig=world.kubeconfig_path,
            home=home,
            kubectl_binary=binary,
        )

    try:
        yield make
    finally:
        for world in worlds:
            world.stop()


def error_ratio(lab: Lab, service: str, *, window_s: int = 10) -> float:
    """The 5xx share of what `service` served over the last `window_s`, from its metrics."""
    sel = f'namespace="{lab.namespace}",service="{service}"'
    errors = lab.metric(
        f'sum by (service) (rate(http_server_requests_total{{{sel},code=~"5.."}}[{window_s}s]))'
    )
    total = lab.metric(f"sum by (service) (rate(http_server_requests_total{{{sel}}}[{window_s}s]))")
    return errors.get(service, 0.0) / total[service] if total.get(service) else 0.0


def healthy(lab: Lab, *workloads: str) -> None:
    """Symptoms cleared: the workloads' pods run and are ready, and no caller sees errors."""
    for workload in workloads:
        pods = lab.pods(workload)
        assert pods, f"{workload} has no pods"
        for cs in lab.container_states(workload):
            assert cs["ready"] and "running" in cs["state"], (workload, cs)
    errors = {n: e for n, (e, _) in lab.signals().items() if e > 0}
    assert not errors, errors


def inject(lab: Lab, fault_id: str, *, after_s: float = 10, **params: object) -> Injection:
    """Inject with the fault's defaults (or `params`), let `after_s` lab seconds pass, and
    check the oracle sees the fault."""
    injection = fault(fault_id).inject(lab.world, app=lab.namespace, params=params or None)
    lab.advance(after_s)
    assert not lab.check(injection).mitigated
    return injection


def fixed(lab: Lab, injection: Injection, *workloads: str) -> None:
    """After a person's fix: the oracle passes and the workloads are healthy."""
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    healthy(lab, *workloads)
