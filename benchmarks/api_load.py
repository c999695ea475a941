"""What Stratus costs the API server (issue 21), counted at the lab's API server.

For 54, 2,000 and 10,000 pods in the covered namespace (a small app whose pods sort last,
behind a crowd of healthy Deployments), the lab's emulated API server
(`lab.kube.server.counting.CountingServer`) counts every request and the bytes it sends, as an
operator would read them in the audit log and traffic graphs. The client is the bot's
API-facing background work, wired as `bot.services` wires it (`build_brain`): the scan every
30 s and the change journal; without the cache the journal runs its own watch threads (30 s
watches) and every read lists, with it the `ClusterCache` holds one list + watch per kind and
namespace (300 s watches) which the journal follows too. Measured:

- **idle**: requests and bytes in one minute after the first list (two scans in it), with the
  cache and without it (every scan lists the namespace, as before issue 21);
- **webhook → plan**: from an alert handed over to the plan proposed (detection's μ0,
  diagnosis, planning) after the app's Deployment was scaled to zero;
- **no spin**: one idle minute covering `default` and every namespace (what an unset
  `STRATUS_NAMESPACES` covers), whose objects are older than the server's watch history.

Run: `.venv/bin/python benchmarks/api_load.py [sizes...]` (about 15 minutes for all three).
Writes `docs/benchmarks/api-load.md`. Goals: idle ≤ 60 requests and ≤ 1 MB a minute at 2,000
pods, flat in cluster size; webhook → plan ≤ 30 requests at every size. A measurement, not a
test: the numbers vary with the machine, the counts should not.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.cache.cluster_cache import ClusterCache
from agents.clock import SystemClock
from agents.journal import JournalWatcher
from agents.model import Alert, AlertStatus, Incident, IncidentId, IncidentState, Scope
from agents.severity import SeverityMeter
from agents.wiring import Brain, build_brain
from lab.clock import LabClock
from lab.kube.bootstrap import NodeSpec
from lab.kube.cluster import LabCluster
from lab.kube.server.counting import CountingServer
from lab.kube.server.thread import ServerThread
from storage import StorageError, Store
from storage.migrations import upgrade

SIZES = (54, 2_000, 10_000)
NS = "shop"
APP = ("cart", "checkout", "catalog")  # 2 replicas each: the app the incident is about
CROWD_DEPLOYMENT = 50  # replicas per crowd Deployment
IDLE_S = 60.0
SCAN_EVERY_S = 30.0
REPORT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "api-load.md"


def _deployment(name: str, replicas: int) -> list[dict[str, Any]]:
    labels = {"app": name}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "lab/app:1.0",
                                "ports": [{"containerPort": 8080}],
                                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                            }
                        ]
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    ]


def _manifests(pods: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "shop-config", "namespace": NS},
            "data": {"MODE": "normal"},
        },
    ]
    for name in APP:
        docs += _deployment(name, 2)
    crowd = pods - 2 * len(APP)
    index = 0
    while crowd > 0:
        replicas = min(CROWD_DEPLOYMENT, crowd)
        docs += _deployment(f"aaa-crowd-{index:03d}", replicas)
        crowd -= replicas
        index += 1
    return docs


def _running(cluster: LabCluster) -> int:
    count = 0
    for pod in cluster.store.iter_objects("Pod"):
        if (pod.get("metadata") or {}).get("namespace") != NS:
            continue
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if (pod.get("status") or {}).get("phase") == "Running" and statuses:
            count += bool(statuses[0].get("ready"))
    return count


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    requests: int
    lists: int
    watches: int
    bytes: int
    seconds: float

    @property
    def per_minute(self) -> tuple[float, float]:
        factor = 60.0 / self.seconds
        return self.requests * factor, self.bytes * factor


class Meter:
    """Requests and bytes the server answered between `start` and `stop`."""

    def __init__(self, server: CountingServer) -> None:
        self._server = server
        self._t0 = 0.0
        self._sent0: list[int] = []

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._sent0 = self._server.sent()

    def stop(self) -> Window:
        seconds = time.monotonic() - self._t0
        sent = self._server.sent()
        new = self._server.since(self._t0)
        total = sum(b - (self._sent0[i] if i < len(self._sent0) else 0) for i, b in enumerate(sent))
        return Window(
            requests=len(new),
            lists=sum(1 for s in new if s.method == "GET" and not s.watch),
            watches=sum(1 for s in new if s.watch),
            bytes=total,
            seconds=seconds,
        )


@dataclass
class Bot:
    """The bot's API-facing background work, as `bot.services` wires it."""

    brain: Brain
    kube: KubernetesCluster
    cache: ClusterCache | None
    journal: JournalWatcher
    store: Store

    def stop(self, server: CountingServer) -> None:
        self.journal.signal_stop()
        if self.cache is not None:
            self.cache.close(timeout_s=0)
        server.close_watches()  # ends the open watches, as their timeoutSeconds would
        self.journal.stop(timeout_s=5)
        self.store.close()


def _bot(kube: KubernetesCluster, namespaces: list[str], db: Path, *, cached: bool) -> Bot:
    url = f"sqlite:///{db}"
    upgrade(url)
    store = Store.connect(url)
    cache = ClusterCache(kube, sink_errors=(StorageError,)) if cached else None
    brain = build_brain(
        store=store,
        reader=kube,
        cached=cache,
        writer=kube,
        metrics=None,
        clock=SystemClock(),
        namespaces=namespaces,
    )
    journal = JournalWatcher(journal=brain.journal, watcher=kube, timeout_s=30, cache=cache)
    journal.start()  # first, as the bot does: it follows the cache's watches from their list
    if cache is not None:
        cache.start(namespaces)
    return Bot(brain=brain, kube=kube, cache=cache, journal=journal, store=store)


def _idle(
    bot: Bot, server: CountingServer, namespaces: list[str], started: Meter
) -> tuple[Window, Window]:
    """What the start cost (`started` runs since before the bot started: the first lists
    and watches, the first scan), then one minute after it: the scans at 15 s and 45 s."""
    if bot.cache is not None:
        for ns in namespaces:
            bot.cache.wait_synced(ns, timeout_s=300)
    bot.brain.scanner.scan()  # the first list
    time.sleep(2.0)  # let the journal's first lists land before the window opens
    start = started.stop()
    meter = Meter(server)
    meter.start()
    began = time.monotonic()
    for at in (SCAN_EVERY_S / 2, SCAN_EVERY_S * 1.5):
        time.sleep(max(0.0, began + at - time.monotonic()))
        bot.brain.scanner.scan()
    time.sleep(max(0.0, began + IDLE_S - time.monotonic()))
    return start, meter.stop()


def _webhook_to_plan(bot: Bot, server: CountingServer, cluster: LabCluster) -> tuple[Window, str]:
    """The cart Deployment scaled to zero; an alert as Alertmanager would send it; then
    detection's μ0, the diagnosis and the plan, as the incident machine runs them."""
    cluster.api.patch(
        "Deployment",
        NS,
        "cart",
        {"spec": {"replicas": 0}},
        patch_type="merge",
        field_manager="kubectl-edit",
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(
        (p.get("metadata") or {}).get("labels", {}).get("app") == "cart"
        for p in cluster.store.iter_objects("Pod")
        if (p.get("metadata") or {}).get("namespace") == NS
    ):
        time.sleep(0.1)
    time.sleep(2.0)  # the watches (journal, cache) deliver the change
    now = datetime.now(UTC)
    alert = Alert(
        fingerprint="bench-cart",
        name="KubeDeploymentReplicasMismatch",
        status=AlertStatus.FIRING,
        labels={
            "alertname": "KubeDeploymentReplicasMismatch",
            "namespace": NS,
            "service": "cart",
            "deployment": "cart",
            "severity": "critical",
        },
        annotations={"summary": "cart has no available replicas"},
        starts_at=now,
    )
    scope = Scope(cluster="lab", namespace=NS)
    meter = Meter(server)
    meter.start()
    mu0 = _mu0(bot, scope)
    incident = Incident(
        id=IncidentId("inc-bench"),
        title="cart unavailable",
        scope=scope,
        state=IncidentState.PLANNING,
        mu0=mu0,
        opened_at=now,
        updated_at=now,
        service="cart",
    )
    diagnosis = bot.brain.diagnoser.diagnose(incident, [alert])
    proposal = bot.brain.planner.plan(incident, diagnosis, [], now=datetime.now(UTC))
    window = meter.stop()
    plan = (
        "; ".join(a.describe() for a in proposal.candidates[0].actions)
        if proposal.candidates
        else f"escalation: {proposal.escalation}"
    )
    return window, plan


def _mu0(bot: Bot, scope: Scope) -> float:
    """μ0 as the detector measures it when it opens an incident: the detector's meter reads
    the cache when there is one (`build_brain`), the same reader as this one."""
    reader = bot.cache if bot.cache is not None else bot.kube
    return SeverityMeter(reader=reader, metrics=None).measure(scope).mu


@dataclass(frozen=True, slots=True, kw_only=True)
class SizeResult:
    pods: int
    startup_s: float
    start_uncached: Window
    start_cached: Window
    idle_uncached: Window
    idle_cached: Window
    plan_uncached: Window
    plan_cached: Window
    plan: str


def _cluster(pods: int) -> LabCluster:
    nodes = [
        NodeSpec(name=f"lab-node-{i + 1}", pods="250", cpu="64", memory="256Gi")
        for i in range(pods // 200 + 3)
    ]
    return LabCluster(clock=LabClock(speed=1.0), seed=0, nodes=nodes, history_limit=100_000)


def _serve(
    cluster: LabCluster, tmp: Path
) -> tuple[CountingServer, ServerThread, KubernetesCluster]:
    server = CountingServer(cluster)
    thread = ServerThread(server)
    url = thread.start()
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
        f"clusters: [{{name: lab, cluster: {{server: '{url}'}}}}]\n"
        "users: [{name: admin, user: {token: lab-token}}]\n"
        "contexts: [{name: lab, context: {cluster: lab, user: admin}}]\n"
    )
    kube = KubernetesCluster.connect(kubeconfig=kubeconfig, cluster_name="lab")
    return server, thread, kube


def measure(pods: int) -> SizeResult:
    cluster = _cluster(pods)
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        cluster.start()
        try:
            began = time.monotonic()
            cluster.apply_manifests(_manifests(pods), field_manager="helm")
            while _running(cluster) < pods and time.monotonic() - began < 900:
                time.sleep(0.5)
            startup = time.monotonic() - began
            print(f"{pods} pods: {_running(cluster)} running after {startup:.0f}s", flush=True)
            server, thread, kube = _serve(cluster, tmp)
            try:
                results: dict[bool, tuple[Window, Window, Window, str]] = {}
                for cached in (False, True):
                    started = Meter(server)
                    started.start()
                    bot = _bot(kube, [NS], tmp / f"db-{cached}.sqlite", cached=cached)
                    try:
                        start, idle = _idle(bot, server, [NS], started)
                        print(f"  start cached={cached}: {start}", flush=True)
                        print(f"  idle cached={cached}: {idle}", flush=True)
                        plan_window, plan = _webhook_to_plan(bot, server, cluster)
                        print(f"  plan cached={cached}: {plan_window} {plan}", flush=True)
                        results[cached] = (start, idle, plan_window, plan)
                    finally:
                        bot.stop(server)
                    # Put the app back for the next mode.
                    cluster.api.patch(
                        "Deployment",
                        NS,
                        "cart",
                        {"spec": {"replicas": 2}},
                        patch_type="merge",
                        field_manager="helm",
                    )
                    while _running(cluster) < pods and time.monotonic() - began < 1800:
                        time.sleep(0.2)
            finally:
                kube.close()
                thread.stop()
        finally:
            cluster.stop()
    return SizeResult(
        pods=pods,
        startup_s=startup,
        start_uncached=results[False][0],
        start_cached=results[True][0],
        idle_uncached=results[False][1],
        idle_cached=results[True][1],
        plan_uncached=results[False][2],
        plan_cached=results[True][2],
        plan=results[True][3],
    )


def no_spin() -> dict[str, tuple[Window, Window]]:
    """An idle minute covering `default` alone, and every namespace (an unset
    STRATUS_NAMESPACES), after the server forgot the history of every object in them."""
    out: dict[str, tuple[Window, Window]] = {}
    cluster = _cluster(54)
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        cluster.start()
        try:
            cluster.apply_manifests(_manifests(54), field_manager="helm")
            began = time.monotonic()
            while _running(cluster) < 54 and time.monotonic() - began < 300:
                time.sleep(0.2)
            cluster.store.compact()  # every object is now older than the watch history
            server, thread, kube = _serve(cluster, tmp)
            try:
                every = [n for n in kube.namespaces() if not n.startswith("kube-")]
                for label, namespaces in (
                    ("`default`", ["default"]),
                    ("every namespace (STRATUS_NAMESPACES unset)", every),
                ):
                    started = Meter(server)
                    started.start()
                    bot = _bot(kube, namespaces, tmp / f"db-{len(out)}.sqlite", cached=True)
                    try:
                        out[f"{label}: {', '.join(namespaces)}"] = _idle(
                            bot, server, namespaces, started
                        )
                    finally:
                        bot.stop(server)
            finally:
                kube.close()
                thread.stop()
        finally:
            cluster.stop()
    return out


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def report(sizes: list[SizeResult], spin: dict[str, tuple[Window, Window]]) -> str:
    lines = [
        "# API server load (issue 21)",
        "",
        f"Generated by `benchmarks/api_load.py` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        f"({platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs shared with other work). Counted at the lab's API server "
        "(`CountingServer`): every request, and the bytes it sent (watch streams included, "
        "counted inside the window they were sent in).",
        "",
        "The client is the bot's API-facing background work as `build_services` wires it: "
        "the scan every 30 s and the change journal. Without the cache (as before issue 21) "
        "every scan lists the namespace and the journal runs its own watches (4 kinds, 30 s "
        "watches); with it, one list + watch per cached kind (8 kinds, 300 s watches) serves "
        "the scan, detection, diagnosis, planning and the journal. All pods are in the one "
        "covered namespace; the incident's app sorts after the crowd.",
        "",
        "## Idle: one minute after the first list (two scans)",
        "",
        "| pods | without cache: requests / min | bytes / min | with cache: requests / min "
        "| bytes / min | with cache, the start: requests | bytes |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sizes:
        u, c = r.idle_uncached.per_minute, r.idle_cached.per_minute
        st = r.start_cached
        lines.append(
            f"| {r.pods:,} | {u[0]:.0f} | {_mb(u[1])} | {c[0]:.0f} | {_mb(c[1])} "
            f"| {st.requests} ({st.lists} lists, {st.watches} watches) | {_mb(st.bytes)} |"
        )
    lines += [
        "",
        "Goal: ≤ 60 requests and ≤ 1 MB a minute at 2,000 pods, flat in cluster size. "
        "Without the cache, each scan lists the namespace (pods, workloads, events) and the "
        "journal re-opens its 4 watches every 30 s. With it, the scans read memory and the "
        "requests are the watches' own: each of the 8 stores re-opens its 300 s watch every "
        "5 minutes, 1.6 requests a minute in the long run (a one-minute window sees 0 to 8), "
        "plus a re-list after any break. The bytes are the objects that really changed.",
        "",
        "## Webhook → plan",
        "",
        "The app's `cart` Deployment scaled to zero; from the alert handed over to the plan "
        "proposed: detection's μ0, the diagnosis (handlers, logs, journal), the planner.",
        "",
        "| pods | without cache: requests | bytes | with cache: requests | bytes "
        "| seconds (cached) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sizes:
        pu, pc = r.plan_uncached, r.plan_cached
        lines.append(
            f"| {r.pods:,} | {pu.requests} | {_mb(pu.bytes)} | {pc.requests} | {_mb(pc.bytes)} "
            f"| {pc.seconds:.2f} |"
        )
    lines += [
        "",
        f"The plan (cached, every size): {sizes[0].plan if sizes else ''}",
        "",
        "Goal: ≤ 30 requests at every size.",
        "",
        "## No spin",
        "",
        "54 pods; every object older than the server's watch history (`store.compact()`), so "
        "a watch that resumed from an object's version would be refused (410) at once.",
        "",
        "| namespaces covered (with the cache) | the start: requests | idle: requests / min "
        "| bytes / min |",
        "|---|---:|---:|---:|",
    ]
    for label, (st, w) in spin.items():
        rq, by = w.per_minute
        lines.append(
            f"| {label} | {st.requests} ({st.lists} lists, {st.watches} watches) "
            f"| {rq:.0f} | {_mb(by)} |"
        )
    lines += ["", *_READING.splitlines(), ""]
    return "\n".join(lines)


_READING = """## Reading it

- The start is paid once per bot start and namespace (and again after a watch breaks): the
  cache lists everything it will serve, pages of 500.
- "Without the cache" is today's code with `Options.cache` off, so its lists are whole (no
  more cut after five pages); at 10,000 pods a scan takes long enough to stretch its idle
  window past the minute (182 s on 2026-12-02, 73 s on 2026-12-03; the rates are per minute of
  it).
- The cached webhook → plan requests are the reads the cache passes through by design
  (single objects, nodes, quotas, pod metrics, logs). Its seconds are CPU: every cached read
  parses the stored objects again (10,000 pods and their events at 10,000).
- The lab's pods do not change while idle; in a real cluster the cached bytes per minute are
  the objects that changed, once each."""


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING)
    sizes = [int(a) for a in argv] or list(SIZES)
    results = [measure(n) for n in sizes]
    spin = no_spin()
    text = report(results, spin)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
