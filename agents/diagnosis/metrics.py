"""Golden signals, the call graph and CPU saturation, read through `MetricsSource` (and
PodMetrics when the cluster serves metrics.k8s.io). Without a metrics source diagnosis still
works from cluster state; the gap is recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.diagnosis.graph import add_edge
from agents.diagnosis.handlers import Handler
from agents.diagnosis.items import Item, make_item
from agents.diagnosis.observe import Observations
from agents.errors import StratusError
from agents.kubeparse import quantity_millis
from agents.model import EvidenceKind, KubeObject

if TYPE_CHECKING:
    from agents.diagnosis.collect import Collector


def read_signals(collector: Collector, obs: Observations, handler: Handler) -> list[Item]:
    metrics = collector.metrics
    if metrics is None:
        obs.gaps.append("no metrics source: golden signals unknown")
        return []
    ns = obs.scope.namespace
    step = handler.collect.signals
    t = handler.thresholds
    signals = collector.read_one(
        obs,
        "golden signals",
        lambda: metrics.golden_signals(ns, None, window_s=step.window_s),
        core=True,
    )
    obs.signals = dict(signals or {})
    edges = collector.read_many(
        obs, "call graph", lambda: metrics.call_graph(ns, window_s=step.call_graph_window_s)
    )
    for caller, callee in edges[:2000]:
        add_edge(obs, str(caller), str(callee), "metrics")
    items = []
    fine = []
    for name, s in sorted(obs.signals.items()):
        line = (
            f"{name}: {s.request_rate:.2f} req/s, errors {s.error_ratio:.1%}, "
            f"p50 {s.latency_p50_ms:.0f} ms, p99 {s.latency_p99_ms:.0f} ms"
        )
        bad = s.request_rate >= t.min_request_rate and (
            s.error_ratio >= t.error_ratio or s.latency_p99_ms >= t.latency_p99_ms
        )
        if not bad:
            fine.append(line)
            continue
        key = f"signals:{name}"
        obs.cite(key, key)
        items.append(
            make_item(
                key=key,
                kind=EvidenceKind.METRIC,
                source=f"golden-signals/{ns}/{name}?window={step.window_s}s",
                summary=line,
                service=name,
                detail=line,
                redactor=collector.redactor,
                relevance=0.8,
            )
        )
    if fine:
        items.append(
            make_item(
                key="signals:healthy",
                kind=EvidenceKind.METRIC,
                source=f"golden-signals/{ns}",
                summary=f"{len(fine)} services within thresholds",
                detail="\n".join(fine[:60]),
                redactor=collector.redactor,
                relevance=0.15,
            )
        )
    return items


def graph_item(collector: Collector, obs: Observations) -> list[Item]:
    if not obs.edges:
        return []
    lines = [
        f"{a} -> {b} ({obs.edge_sources.get((a, b), '?')})" for a, b in sorted(obs.edges)[:150]
    ]
    sources = sorted(set(obs.edge_sources.values()))
    return [
        make_item(
            key="graph",
            kind=EvidenceKind.METRIC,
            source=f"call-graph/{obs.scope.namespace}",
            summary=f"dependency graph: {len(obs.edges)} edges from {', '.join(sources)}",
            detail="\n".join(lines),
            redactor=collector.redactor,
            relevance=0.35,
        )
    ]


def read_saturation(collector: Collector, obs: Observations, handler: Handler) -> list[Item]:
    step = handler.collect.saturation
    ns = obs.scope.namespace
    by_pod: dict[str, float] = {}
    metrics = collector.metrics
    if step.cpu_ratio_promql and metrics is not None:
        promql = step.cpu_ratio_promql.replace("{namespace}", ns)
        for series in collector.read_many(
            obs, "CPU saturation query", lambda: metrics.query(promql)
        ):
            pod = series.labels.get("pod")
            if pod and series.points:
                by_pod[pod] = series.points[-1].value
    if not by_pod and step.pod_metrics:
        by_pod = _pod_metrics(collector, obs)
    pod_service = {p.name: svc for svc, pods in obs.pods.items() for p in pods}
    for pod, ratio in by_pod.items():
        service = pod_service.get(pod)
        if service is not None:
            obs.cpu_ratio[service] = max(ratio, obs.cpu_ratio.get(service, 0.0))
    items = []
    for service, ratio in sorted(obs.cpu_ratio.items()):
        if ratio < handler.thresholds.cpu_saturation:
            continue
        key = f"cpu:{service}"
        obs.cite(key, key)
        items.append(
            make_item(
                key=key,
                kind=EvidenceKind.METRIC,
                source=f"cpu-saturation/{ns}/{service}",
                summary=f"{service}: CPU use at {ratio:.0%} of its limit (throttled)",
                service=service,
                detail=f"max over pods of CPU usage / CPU limit = {ratio:.2f}",
                redactor=collector.redactor,
                relevance=0.85,
            )
        )
    return items


def _pod_metrics(collector: Collector, obs: Observations) -> dict[str, float]:
    ns = obs.scope.namespace

    def read() -> list[KubeObject]:
        return list(
            collector.cluster.list_objects(
                api_version="metrics.k8s.io/v1beta1", kind="PodMetrics", namespace=ns
            )
        )

    try:
        bodies = read()
    except StratusError:
        return {}  # metrics.k8s.io is optional: no PodMetrics is not a gap worth reporting
    pod_service = {p.name: svc for svc, pods in obs.pods.items() for p in pods}
    out: dict[str, float] = {}
    for body in bodies:
        spec = obs.specs.get(pod_service.get(body.name, ""))
        if spec is None:
            continue
        limits = {c.name: c.cpu_limit_millis for c in spec.containers}
        for c in body.body.get("containers") or []:
            if not isinstance(c, dict):
                continue
            limit = limits.get(str(c.get("name")))
            used = quantity_millis((c.get("usage") or {}).get("cpu"))
            if limit:
                out[body.name] = max(out.get(body.name, 0.0), used / limit)
    return out
