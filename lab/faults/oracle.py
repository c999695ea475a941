"""The mitigation oracle: is the fault really mitigated, and was no harm done?

"All pods healthy" alone would pass a cluster where the broken workload was deleted or scaled
to zero, so the oracle demands four things at once, each reported as a readable problem line:

* **no harm**: every Deployment/StatefulSet of the baseline (recorded at injection) still
  exists and is not scaled to zero;
* **cluster state**: every rollout converged (observed generation, updated = available =
  desired, no surplus pods), every pod Running and Ready, no container restarted within the
  window;
* **SLOs over the window** (the app model's error ratio and p99 latency), from the same
  telemetry Prometheus would scrape: each service's own 5xx ratio and latency, and the error
  ratio its callers see (which catches a service that serves nothing at all), with traffic
  reaching the app's entry;
* whatever the fault itself says still holds it (a network condition still in force).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agents.errors import QueryError
from agents.model import JsonObject
from lab.faults.model import Injection
from lab.faults.registry import fault
from lab.kube.jsonutil import parse_time
from lab.sim.promql import Vector

if TYPE_CHECKING:
    from lab.sim.world import LabWorld

logger = logging.getLogger(__name__)

DEFAULT_WINDOW_S = 30.0
MIN_RATE = 0.05  # requests/s below which a service's ratios mean nothing


@dataclass(frozen=True, slots=True, kw_only=True)
class OracleVerdict:
    mitigated: bool
    problems: tuple[str, ...]
    at: datetime

    def summary(self) -> str:
        if self.mitigated:
            return "mitigated"
        return "not mitigated: " + "; ".join(self.problems)


class MitigationOracle:
    def __init__(self, injection: Injection, *, window_s: float = DEFAULT_WINDOW_S) -> None:
        self.injection = injection
        self.window_s = window_s

    def check(self, world: LabWorld) -> OracleVerdict:
        now = world.clock.now()
        ns = self.injection.namespace
        problems = [
            *self._baseline(world),
            *_rollouts(world, ns),
            *_pods(world, ns, now, self.window_s),
            *self._slos(world, now),
            *fault(self.injection.fault_id).blockers(world, self.injection),
        ]
        return OracleVerdict(mitigated=not problems, problems=tuple(problems), at=now)

    def _baseline(self, world: LabWorld) -> list[str]:
        out = []
        for key, replicas in sorted(self.injection.baseline.workloads.items()):
            kind, _, name = key.partition("/")
            obj = world.shared.get(kind, self.injection.namespace, name)
            if obj is None:
                out.append(f"{key} was deleted (no harm allowed)")
                continue
            now_replicas = int((obj.get("spec") or {}).get("replicas", 1))
            if replicas > 0 and now_replicas == 0:
                out.append(f"{key} is scaled to zero (it had {replicas})")
        return out

    def _slos(self, world: LabWorld, now: datetime) -> list[str]:
        bundle = next(b for b in world.bundles if b.namespace == self.injection.namespace)
        slo = bundle.model.slo
        ns = bundle.namespace
        window = max(self.window_s, 2 * world.sim.store.scrape_interval_s)
        evaluator = world.promql
        at = now.timestamp()

        def by(label: str, query: str) -> dict[str, float]:
            try:
                value = evaluator.evaluate(query, at)
            except QueryError:  # pragma: no cover - the queries are fixed and tested
                logger.exception("oracle query failed")
                return {}
            if not isinstance(value, Vector):
                return {}
            return {
                lbls[label]: v for lbls, v in value.samples if label in lbls and not math.isnan(v)
            }

        sel = f'namespace="{ns}"'
        w = f"{int(window)}s"
        served = by("service", f"sum by (service) (rate(http_server_requests_total{{{sel}}}[{w}]))")
        served_5xx = by(
            "service",
            f'sum by (service) (rate(http_server_requests_total{{{sel},code=~"5.."}}[{w}]))',
        )
        p99 = by(
            "service",
            "histogram_quantile(0.99, sum by (service, le) "
            f"(rate(http_server_request_duration_seconds_bucket{{{sel}}}[{w}])))",
        )
        called = by("peer", f"sum by (peer) (rate(http_client_requests_total{{{sel}}}[{w}]))")
        called_5xx = by(
            "peer",
            f'sum by (peer) (rate(http_client_requests_total{{{sel},code=~"5.."}}[{w}]))',
        )
        out = []
        entry = bundle.model.entry.target
        if served.get(entry, 0.0) < MIN_RATE:
            out.append(f"no traffic reaches {entry} (the app's entry) over {w}")
        for service in sorted(set(served) | set(called)):
            rate = served.get(service, 0.0)
            if rate >= MIN_RATE:
                ratio = served_5xx.get(service, 0.0) / rate
                if ratio > slo.error_ratio:
                    out.append(
                        f"{service}: {ratio:.1%} of requests fail over {w} "
                        f"(SLO {slo.error_ratio:.1%})"
                    )
                latency_ms = p99.get(service, 0.0) * 1000.0
                if latency_ms > slo.latency_p99_ms:
                    out.append(
                        f"{service}: p99 latency {latency_ms:.0f} ms over {w} "
                        f"(SLO {slo.latency_p99_ms:.0f} ms)"
                    )
            calls = called.get(service, 0.0)
            if calls >= MIN_RATE:
                ratio = called_5xx.get(service, 0.0) / calls
                if ratio > slo.error_ratio:
                    out.append(
                        f"{service}: {ratio:.1%} of calls to it fail over {w} "
                        f"(SLO {slo.error_ratio:.1%})"
                    )
        return out


def check_mitigation(
    world: LabWorld, injection: Injection, *, window_s: float = DEFAULT_WINDOW_S
) -> OracleVerdict:
    """`MitigationOracle(injection, window_s=...).check(world)`."""
    return MitigationOracle(injection, window_s=window_s).check(world)


def _rollouts(world: LabWorld, ns: str) -> list[str]:
    out = []
    for dep in world.shared.list("Deployment", ns):
        name = dep["metadata"]["name"]
        spec = dep.get("spec") or {}
        status = dep.get("status") or {}
        want = int(spec.get("replicas", 1))
        if want == 0:
            continue  # a workload someone keeps at zero; the baseline check judges that
        observed = int(status.get("observedGeneration", 0))
        updated = int(status.get("updatedReplicas", 0))
        available = int(status.get("availableReplicas", 0))
        total = int(status.get("replicas", 0))
        if observed < int(dep["metadata"].get("generation", 1)) or not (
            updated == available == total == want
        ):
            out.append(
                f"Deployment/{name}: rollout not converged ({available}/{want} available, "
                f"{updated} updated, {total} pods)"
            )
    for sts in world.shared.list("StatefulSet", ns):
        name = sts["metadata"]["name"]
        want = int((sts.get("spec") or {}).get("replicas", 1))
        status = sts.get("status") or {}
        ready = int(status.get("readyReplicas", 0))
        if want and (
            ready != want or status.get("currentRevision") != status.get("updateRevision")
        ):
            out.append(f"StatefulSet/{name}: {ready}/{want} ready")
    return out


def _pods(world: LabWorld, ns: str, now: datetime, window_s: float) -> list[str]:
    out = []
    recent = now - timedelta(seconds=window_s)
    for pod in world.shared.list("Pod", ns):
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            continue  # on its way out; a rollout that still needs it shows above
        status = pod.get("status") or {}
        phase = status.get("phase", "Pending")
        if phase == "Succeeded":
            continue
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        if phase != "Running" or not ready:
            out.append(f"Pod/{name}: {phase}, not ready{_why(pod)}")
            continue
        for cs in status.get("containerStatuses") or []:
            last = (cs.get("lastState") or {}).get("terminated") or {}
            finished = parse_time(last.get("finishedAt"))
            if finished is not None and finished > recent:
                out.append(
                    f"Pod/{name}: container {cs.get('name')} restarted within {window_s:.0f}s "
                    f"({last.get('reason', 'terminated')})"
                )
    return out


def _why(pod: JsonObject) -> str:
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            return f" ({cs.get('name')}: {waiting['reason']})"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return f" (unschedulable: {cond.get('message', '')})"
    return ""
