"""`Simulator`: the workload simulator's one entry point, driven by `tick(now)` each lab second.

A tick reads the cluster's objects (through the `ClusterView` the runtime is attached to),
routes the apps' traffic through them (`lab.sim.traffic`), accumulates the request counters,
latency histograms and container CPU counters, and every `scrape_interval_s` rebuilds the
kube-state gauges and appends everything to the history the metrics source reads. Ticks are
deterministic: the same seed and the same sequence of cluster states give the same numbers.

Thread-safety: `tick` runs in the clock's thread (stepped) or the lab's reconcile thread
(running); readers (`snapshot`, the exporter, the metrics source) take the same lock.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from agents.model import JsonObject
from lab.kube.runtime import ClusterView
from lab.sim.dataplane import DataPlane
from lab.sim.images import ImageRegistry
from lab.sim.kubeobj import limits, requests
from lab.sim.metrics import MetricStore, SeriesKey, labels
from lab.sim.model import AppModel
from lab.sim.runtime import Process, SimRuntime
from lab.sim.snapshot import AppSnapshot, PodSignals, ServiceSignals, mixture_quantile, pod_state
from lab.sim.topology import Topology, node_readiness
from lab.sim.traffic import AppTraffic, Flows

logger = logging.getLogger(__name__)

_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_CFS_PERIODS_PER_S = 10.0


@dataclass(slots=True)
class _Latest:
    flows: Flows
    topo: Topology
    procs: list[Process]
    at: datetime


class Simulator:
    def __init__(
        self,
        *,
        models: Sequence[AppModel],
        seed: int = 0,
        registry: ImageRegistry | None = None,
        dataplane: DataPlane | None = None,
        scrape_interval_s: float = 5.0,
        retention_s: float = 3600.0,
    ) -> None:
        self.models = {m.namespace: m for m in models}
        self.seed = seed
        self.runtime = SimRuntime(models=models, registry=registry, dataplane=dataplane)
        self.dataplane = self.runtime.dataplane
        self.registry = self.runtime.registry
        self.store = MetricStore(scrape_interval_s=scrape_interval_s, retention_s=retention_s)
        self._traffic = {m.namespace: AppTraffic(m, self.dataplane, seed=seed) for m in models}
        self._lock = threading.RLock()
        self._last_tick: datetime | None = None
        self._last_scrape: datetime | None = None
        self._latest: dict[str, _Latest] = {}
        self._ticks = 0
        self._view: ClusterView | None = None
        self._version: Callable[[], int] | None = None
        self._seen_version: int | None = None
        self._nodes: dict[str, bool] = {}
        self._topos: dict[str, Topology] = {}
        self._deployments: dict[str, list[JsonObject]] = {}
        self._on_scrape: list[Callable[[datetime], None]] = []

    def attach(self, view: ClusterView, *, version: Callable[[], int] | None = None) -> None:
        """Read the cluster through `view`. `version`, when given, returns a number that
        changes whenever any object changes (the store's resourceVersion): ticks then reuse
        the objects they read until something changes, which keeps a tick cheap."""
        self._view = view
        self._version = version
        self.runtime.attach(view)

    def on_scrape(self, callback: Callable[[datetime], None]) -> None:
        """Run `callback(now)` after each history scrape (in-process alert evaluation)."""
        self._on_scrape.append(callback)

    @property
    def namespaces(self) -> list[str]:
        return list(self.models)

    # ----------------------------------------------------------------------- tick

    def tick(self, now: datetime) -> None:
        view = self._view
        if view is None:
            raise RuntimeError("Simulator.attach(view) was not called")
        with self._lock, self.store.lock:
            dt = 0.0 if self._last_tick is None else (now - self._last_tick).total_seconds()
            if self._last_tick is not None and dt <= 0:
                return
            self._last_tick = now
            self._ticks += 1
            changed = self._read_objects(view)
            by_ns: dict[str, list[Process]] = defaultdict(list)
            for proc in self.runtime.processes():
                by_ns[proc.namespace].append(proc)
            alive: set[str] = set()
            for ns, traffic in self._traffic.items():
                topo = self._topos[ns]
                alive.update(p.uid for p in topo.pods.values())
                procs = by_ns.get(ns, [])
                if traffic.flags is not None:
                    traffic.flags.refresh(view)
                flows = traffic.compute(now, dt, topo, procs)
                self._record(ns, flows, procs, topo, dt=dt, changed=changed)
                self._latest[ns] = _Latest(flows=flows, topo=topo, procs=procs, at=now)
            if self._ticks % 30 == 0:
                alive.update(
                    str(p["metadata"].get("uid", ""))
                    for ns, pods in by_ns.items()
                    if ns not in self._traffic
                    for p in view.list("Pod", ns)
                )
                self.runtime.forget_except(alive)
            due = self._last_scrape is None or (
                (now - self._last_scrape).total_seconds() >= self.store.scrape_interval_s - 1e-6
            )
            if due:
                self._kube_state()
                self.store.scrape(now.timestamp())
                self._last_scrape = now
        if due:
            for callback in list(self._on_scrape):
                callback(now)

    def _read_objects(self, view: ClusterView) -> bool:
        """Refresh the objects a tick reads, unless the cluster's version says nothing
        changed. Returns whether they were re-read."""
        version = self._version() if self._version is not None else None
        if version is not None and version == self._seen_version and self._topos:
            return False
        self._seen_version = version
        self._nodes = node_readiness(view)
        for ns in self._traffic:
            self._topos[ns] = Topology(ns, view, self._nodes)
            self._deployments[ns] = view.list("Deployment", ns)
        return True

    def _record(
        self,
        ns: str,
        flows: Flows,
        procs: list[Process],
        topo: Topology,
        *,
        dt: float,
        changed: bool,
    ) -> None:
        store = self.store
        if dt <= 0:
            return
        for workload, stats in flows.server.items():
            for code, rate in stats.codes.items():
                if rate > 0:
                    store.inc(
                        "http_server_requests_total",
                        labels(namespace=ns, service=workload, code=str(code)),
                        rate * dt,
                    )
            store.observe(
                "http_server_request_duration_seconds",
                labels(namespace=ns, service=workload),
                ((w * dt, m) for w, m in stats.latency),
            )
        for (caller, peer), codes in flows.client.items():
            for code, rate in codes.items():
                if rate > 0:
                    store.inc(
                        "http_client_requests_total",
                        labels(namespace=ns, service=caller, peer=peer, code=str(code)),
                        rate * dt,
                    )
        for proc in procs:
            pod = topo.pods.get(proc.pod)
            if pod is None or pod.uid != proc.uid or proc.container not in pod.running:
                continue
            ls = labels(namespace=ns, pod=proc.pod, container=proc.container)
            store.inc("container_cpu_usage_seconds_total", ls, proc.cpu_millis() / 1000.0 * dt)
            store.inc("container_cpu_cfs_periods_total", ls, _CFS_PERIODS_PER_S * dt)
            throttle = proc.throttle()
            if throttle > 1.0:
                store.inc(
                    "container_cpu_cfs_throttled_periods_total",
                    ls,
                    _CFS_PERIODS_PER_S * dt * (1.0 - 1.0 / throttle),
                )
        if not changed:
            return
        # A deleted pod's container counters go stale, as cAdvisor's do.
        gone = {
            key
            for key in store.live
            if key[0].startswith("container_cpu")
            and ("namespace", ns) in key[1]
            and dict(key[1]).get("pod") not in topo.pods
        }
        for key in gone:
            del store.live[key]

    def _kube_state(self) -> None:
        values: dict[SeriesKey, float] = {}
        for ns in self._traffic:
            latest = self._latest.get(ns)
            running = {(p.pod, p.container): p for p in latest.procs} if latest else {}
            for info in self._topos[ns].pods.values():
                pod = info.body
                name = info.name
                phase, ready, _, _, _ = pod_state(pod)
                for cond in ("true", "false"):
                    values[
                        ("kube_pod_status_ready", labels(namespace=ns, pod=name, condition=cond))
                    ] = float(ready == (cond == "true"))
                for p in _PHASES:
                    values[("kube_pod_status_phase", labels(namespace=ns, pod=name, phase=p))] = (
                        float(phase == p)
                    )
                statuses = {
                    str(cs.get("name")): cs
                    for cs in (pod.get("status") or {}).get("containerStatuses") or []
                }
                for container in (pod.get("spec") or {}).get("containers") or []:
                    cname = str(container.get("name"))
                    ls = labels(namespace=ns, pod=name, container=cname)
                    cs = statuses.get(cname, {})
                    values[("kube_pod_container_status_ready", ls)] = float(bool(cs.get("ready")))
                    values[("kube_pod_container_status_restarts_total", ls)] = float(
                        cs.get("restartCount", 0)
                    )
                    waiting = (cs.get("state") or {}).get("waiting")
                    if waiting and waiting.get("reason"):
                        values[
                            (
                                "kube_pod_container_status_waiting_reason",
                                labels(
                                    namespace=ns,
                                    pod=name,
                                    container=cname,
                                    reason=str(waiting["reason"]),
                                ),
                            )
                        ] = 1.0
                    last = (cs.get("lastState") or {}).get("terminated")
                    if last and last.get("reason"):
                        values[
                            (
                                "kube_pod_container_status_last_terminated_reason",
                                labels(
                                    namespace=ns,
                                    pod=name,
                                    container=cname,
                                    reason=str(last["reason"]),
                                ),
                            )
                        ] = 1.0
                    for metric, (cpu, mem) in (
                        ("kube_pod_container_resource_limits", limits(container)),
                        ("kube_pod_container_resource_requests", requests(container)),
                    ):
                        if cpu is not None:
                            values[
                                (
                                    metric,
                                    labels(
                                        namespace=ns,
                                        pod=name,
                                        container=cname,
                                        resource="cpu",
                                        unit="core",
                                    ),
                                )
                            ] = cpu / 1000.0
                        if mem is not None:
                            values[
                                (
                                    metric,
                                    labels(
                                        namespace=ns,
                                        pod=name,
                                        container=cname,
                                        resource="memory",
                                        unit="byte",
                                    ),
                                )
                            ] = float(mem)
                    proc = running.get((name, cname))
                    if (
                        proc is not None
                        and "running" in (cs.get("state") or {})
                        and latest is not None
                    ):
                        values[("container_memory_working_set_bytes", ls)] = float(
                            proc.memory_bytes(latest.at)
                        )
            for dep in self._deployments.get(ns, []):
                name = str(dep["metadata"]["name"])
                ls = labels(namespace=ns, deployment=name)
                spec_replicas = int((dep.get("spec") or {}).get("replicas", 1))
                available = int((dep.get("status") or {}).get("availableReplicas", 0))
                values[("kube_deployment_spec_replicas", ls)] = float(spec_replicas)
                values[("kube_deployment_status_replicas_available", ls)] = float(available)
                values[("kube_deployment_status_replicas_unavailable", ls)] = float(
                    (dep.get("status") or {}).get(
                        "unavailableReplicas", max(0, spec_replicas - available)
                    )
                )
        self.store.set_group("kube", values)

    # ------------------------------------------------------------------- snapshot

    def snapshot(self, namespace: str) -> AppSnapshot:
        """The app's health as of the latest tick. Raises KeyError for an unknown namespace."""
        with self._lock:
            if namespace not in self.models:
                raise KeyError(f"no simulated app in namespace {namespace!r}")
            latest = self._latest.get(namespace)
            if latest is None:
                return AppSnapshot(
                    namespace=namespace,
                    at=self._last_tick or datetime.min,
                    entry_rps=0.0,
                    services={},
                    pods={},
                )
            return _snapshot(namespace, latest, self.models[namespace])


def _snapshot(namespace: str, latest: _Latest, model: AppModel) -> AppSnapshot:
    flows = latest.flows
    offered: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for (_, peer), codes in flows.client.items():
        for code, rate in codes.items():
            offered[peer][code] += rate
    services: dict[str, ServiceSignals] = {}
    for name in sorted(set(offered) | set(flows.server)):
        codes = offered.get(name, {})
        total = sum(codes.values())
        errors = sum(r for c, r in codes.items() if c >= 400)
        stats = flows.server.get(name)
        served = sum(stats.codes.values()) if stats else 0.0
        served_5xx = sum(r for c, r in stats.codes.items() if c >= 500) if stats else 0.0
        comps = stats.latency if stats else []
        services[name] = ServiceSignals(
            service=name,
            request_rate=total,
            error_ratio=errors / total if total > 0 else 0.0,
            served_rate=served,
            server_error_ratio=served_5xx / served if served > 0 else 0.0,
            latency_p50_ms=mixture_quantile(comps, 0.5),
            latency_p99_ms=mixture_quantile(comps, 0.99),
            codes=dict(codes),
        )
    procs = {(p.pod, p.uid): p for p in latest.procs}
    pods: dict[str, PodSignals] = {}
    for pod in latest.topo.pods.values():
        phase, ready, restarts, waiting, terminated = pod_state(pod.body)
        proc = procs.get((pod.name, pod.uid))
        running = proc is not None and proc.container in pod.running
        labels_ = (pod.body.get("metadata") or {}).get("labels") or {}
        containers = (pod.body.get("spec") or {}).get("containers") or [{}]
        cpu_limit, mem_limit = limits(containers[0])
        pods[pod.name] = PodSignals(
            pod=pod.name,
            workload=str(labels_.get(model.service_label, "")),
            phase=phase,
            ready=ready,
            restarts=restarts,
            waiting_reason=waiting,
            last_terminated_reason=terminated,
            cpu_millis=proc.cpu_millis() if proc is not None and running else 0.0,
            memory_bytes=proc.memory_bytes(latest.at) if proc is not None and running else 0,
            cpu_limit_millis=cpu_limit,
            memory_limit_bytes=mem_limit,
            throttle=proc.throttle() if proc is not None and running else 1.0,
        )
    return AppSnapshot(
        namespace=namespace, at=latest.at, entry_rps=flows.entry_rps, services=services, pods=pods
    )
