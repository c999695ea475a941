"""Scale benchmark of the emulated cluster (`lab.kube`).

Starts a synthetic lab of 200 services (a Deployment of 10 replicas and a Service each: 2,000
pods), measures the start-up time until every pod is Running and Ready, then the latency of
listing all 2,000 pods over HTTP with the official client and with raw HTTP, and the
per-request overhead of small calls. Writes a markdown report to
`docs/benchmarks/lab-scale.md`.

Run: `.venv/bin/python benchmarks/lab_scale.py` (about a minute). Targets: start-up ≤ 30 s,
list p50 ≤ 200 ms. This is a measurement, not a test.
"""

from __future__ import annotations

import http.client
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from kubernetes import client, config

from lab.clock import LabClock
from lab.kube.bootstrap import NodeSpec
from lab.kube.cluster import LabCluster

SERVICES = 200
REPLICAS = 10
NODES = 20
RUNS = 20
REPORT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "lab-scale.md"


def _manifests() -> list[dict]:
    docs: list[dict] = []
    for i in range(SERVICES):
        ns = f"app-{i // 20}"
        name = f"svc-{i:03d}"
        labels = {"app": name}
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {
                    "replicas": REPLICAS,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "containers": [
                                {
                                    "name": "app",
                                    "image": "lab/app:1.0",
                                    "ports": [{"containerPort": 8080, "name": "http"}],
                                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                                }
                            ]
                        },
                    },
                },
            }
        )
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": "http"}]},
            }
        )
    namespaces = sorted({d["metadata"]["namespace"] for d in docs})
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces
    ] + docs


def _running(cluster: LabCluster) -> int:
    count = 0
    for pod in cluster.store.iter_objects("Pod"):
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if pod["status"].get("phase") == "Running" and statuses and statuses[0].get("ready"):
            count += 1
    return count


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return p50 * 1000, p95 * 1000


def _time(fn: Callable[[], object], runs: int = RUNS) -> tuple[float, float]:
    fn()  # warm up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return _percentiles(samples)


def _raw_get(host: str, port: int, path: str) -> bytes:
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.request("GET", path, headers={"Accept": "application/json"})
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status}")
        return body
    finally:
        connection.close()


def main() -> int:
    nodes = [
        NodeSpec(
            name=f"lab-node-{i + 1}",
            pods="250",
            cpu="16",
            memory="64Gi",
            zone=f"lab-zone-{'abc'[i % 3]}",
        )
        for i in range(NODES)
    ]
    cluster = LabCluster(clock=LabClock(speed=1.0), seed=0, nodes=nodes)
    results: dict[str, object] = {}
    try:
        cluster.start()
        start = time.perf_counter()
        cluster.apply_manifests(_manifests(), field_manager="bench")
        applied = time.perf_counter() - start
        deadline = start + 300
        while _running(cluster) < SERVICES * REPLICAS and time.perf_counter() < deadline:
            time.sleep(0.1)
        startup = time.perf_counter() - start
        running = _running(cluster)
        results.update(
            applied_s=applied,
            startup_s=startup,
            running=running,
            objects=cluster.resource_version(),
        )
        url = cluster.serve()
        host, port = url.removeprefix("http://").split(":")
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = cluster.write_kubeconfig(Path(tmp) / "kubeconfig")
            configuration = client.Configuration()
            config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
        with client.ApiClient(configuration) as api_client:
            core = client.CoreV1Api(api_client)
            count = len(core.list_pod_for_all_namespaces().items)
            results["client_list"] = _time(core.list_pod_for_all_namespaces)
            results["client_list_raw"] = _time(
                lambda: core.list_pod_for_all_namespaces(_preload_content=False).read()
            )
            results["client_small"] = _time(
                lambda: core.list_namespaced_pod("app-0", label_selector="app=svc-000"), runs=200
            )
            results["client_get"] = _time(
                lambda: core.read_namespaced_service("svc-000", "app-0"), runs=200
            )
        body = _raw_get(host, int(port), "/api/v1/pods")
        results["list_bytes"] = len(body)
        results["listed"] = count
        results["raw_list"] = _time(lambda: _raw_get(host, int(port), "/api/v1/pods"))
        results["raw_list_parsed"] = _time(
            lambda: json.loads(_raw_get(host, int(port), "/api/v1/pods"))
        )
        results["loads_only"] = _time(lambda: json.loads(body))
        results["raw_get"] = _time(
            lambda: _raw_get(host, int(port), "/api/v1/namespaces/app-0/services/svc-000"), runs=500
        )
    finally:
        cluster.stop()
    report = _report(results)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(report)
    sys.stdout.write(report)
    raw_p50 = results["raw_list"][0]  # type: ignore[index]
    ok = results["startup_s"] <= 30 and raw_p50 <= 200  # type: ignore[operator]
    return 0 if ok else 1


def _report(r: dict[str, object]) -> str:
    def row(label: str, key: str, target: str = "") -> str:
        p50, p95 = r[key]  # type: ignore[misc]
        return f"| {label} | {p50:.1f} | {p95:.1f} | {target} |"

    startup = r["startup_s"]
    return "\n".join(
        [
            "# Lab cluster scale benchmark",
            "",
            "Generated by `benchmarks/lab_scale.py` "
            f"on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC — Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs, {platform.machine()}.",
            "",
            f"Synthetic lab: {SERVICES} services (a Deployment of {REPLICAS} replicas and a "
            f"Service each) in {SERVICES // 20} namespaces on {NODES} nodes, running clock at "
            "speed 1, default `StaticRuntime`.",
            "",
            "## Start-up",
            "",
            "| Measure | Value | Target |",
            "|---|---|---|",
            f"| Manifests applied (in-process) | {r['applied_s']:.2f} s | |",
            f"| Until all pods Running and Ready | {startup:.2f} s | ≤ 30 s |",
            f"| Pods Running and Ready | {r['running']} | {SERVICES * REPLICAS} |",
            f"| Store resourceVersion after start-up | {r['objects']} | |",
            "",
            f"## Listing all {r['listed']} pods over HTTP ({RUNS} runs; "
            f"{int(r['list_bytes']) / 1e6:.1f} MB of JSON)",  # type: ignore[call-overload]
            "",
            "| Call | p50 ms | p95 ms | Target |",
            "|---|---|---|---|",
            row("Raw HTTP GET /api/v1/pods (bytes)", "raw_list", "p50 ≤ 200 ms"),
            row("Raw HTTP GET + json.loads", "raw_list_parsed"),
            row("json.loads of the body alone (client side, no HTTP)", "loads_only"),
            row("Official client, `_preload_content=False`", "client_list_raw"),
            row("Official client `list_pod_for_all_namespaces()` (models)", "client_list"),
            "",
            "## Small calls (per-request overhead)",
            "",
            "| Call | p50 ms | p95 ms | Target |",
            "|---|---|---|---|",
            row("Raw HTTP GET one Service", "raw_get"),
            row("Official client: read one Service", "client_get"),
            row("Official client: list 10 pods by label in a namespace", "client_small"),
            "",
            "The official client's model-building time (pydantic validation of every field of "
            "2,000 pods) dominates its list latency; the server's share is the raw HTTP figure.",
            "",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
