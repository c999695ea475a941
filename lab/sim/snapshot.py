"""Typed instant views of an app's health, for alert rules, the lab's readiness wait and tests.

`AppSnapshot` is what the simulator computed on its latest tick: per service the request
rate, error ratio and latency (exact, not estimated from buckets), and per pod the state
kube-state-metrics would report. It is the easy way to the numbers an in-process alert
evaluation needs; the PromQL path (`lab.sim.source`) reads the same figures from history.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from agents.model import JsonObject
from lab.sim.outcome import JITTER

_SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceSignals:
    service: str
    request_rate: float  # calls per second its callers made to it (client view)
    error_ratio: float  # share of those calls that failed, as the callers saw them
    served_rate: float  # requests that reached its pods (server view)
    server_error_ratio: float  # 5xx share of what it served
    latency_p50_ms: float  # server-side
    latency_p99_ms: float
    codes: Mapping[int, float]  # client-view calls per second by status


@dataclass(frozen=True, slots=True, kw_only=True)
class PodSignals:
    pod: str
    workload: str
    phase: str
    ready: bool
    restarts: int
    waiting_reason: str | None
    last_terminated_reason: str | None
    cpu_millis: float
    memory_bytes: int
    cpu_limit_millis: int | None
    memory_limit_bytes: int | None
    throttle: float  # CPU demand over limit (1 = not throttled)


@dataclass(frozen=True, slots=True, kw_only=True)
class AppSnapshot:
    namespace: str
    at: datetime
    entry_rps: float
    services: Mapping[str, ServiceSignals]
    pods: Mapping[str, PodSignals]

    @property
    def error_ratio(self) -> float:
        """The largest client-observed error ratio of any service (0 when all is well)."""
        return max((s.error_ratio for s in self.services.values()), default=0.0)


def mixture_quantile(components: Iterable[tuple[float, float]], q: float) -> float:
    """The q-quantile (ms) of a weighted mixture of log-normal latencies (weight, median)."""
    comps = [(w, math.log(m)) for w, m in components if w > 0 and m > 0]
    total = sum(w for w, _ in comps)
    if total <= 0:
        return 0.0
    lo = min(lm for _, lm in comps) - 5 * JITTER
    hi = max(lm for _, lm in comps) + 5 * JITTER
    for _ in range(40):
        mid = (lo + hi) / 2
        cdf = sum(w * 0.5 * math.erfc(-(mid - lm) / JITTER / _SQRT2) for w, lm in comps) / total
        if cdf < q:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def pod_state(pod: JsonObject) -> tuple[str, bool, int, str | None, str | None]:
    """(phase, ready, restarts, waiting reason, last terminated reason) from a Pod's status."""
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    restarts = 0
    waiting = terminated = None
    for cs in status.get("containerStatuses") or []:
        restarts += int(cs.get("restartCount", 0))
        state = cs.get("state") or {}
        if "waiting" in state and waiting is None:
            waiting = (state["waiting"] or {}).get("reason")
        last = (cs.get("lastState") or {}).get("terminated")
        if last and terminated is None:
            terminated = last.get("reason")
    return str(status.get("phase", "Pending")), ready, restarts, waiting, terminated
