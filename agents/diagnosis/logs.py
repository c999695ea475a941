"""Log tails, read in the handler's widening order.

Logs are the expensive read, so they are rationed (`max_pods`, `pods_per_service`,
`tail_lines`) and spent where the answer is likely: the alerting service first, then what it
calls — and, as soon as a caller's error line names a callee or an address it owns, that
callee next — then its callers, then the rest of the namespace's anomalous services. Restarted
containers also get their previous container's tail, where a crash explains itself.

A tail is bounded in time too (`agents.diagnosis.logtime`): lines written more than the
handler's `since_s` before the incident started are dropped before anything reads them, so a
service's start-up complaints from long ago do not become hypotheses.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from agents.diagnosis.graph import add_edge, downstream, upstream
from agents.diagnosis.handlers import Handler, Thresholds, Widen
from agents.diagnosis.items import Item, clip, clip_lines, make_item
from agents.diagnosis.logtime import since
from agents.diagnosis.observe import LogTail, Observations
from agents.diagnosis.signs import Blamer, Sign, classify, is_error_line, signs_of
from agents.diagnosis.state import pod_symptoms
from agents.model import EvidenceKind, GoldenSignals, PodState, WorkloadState

if TYPE_CHECKING:
    from agents.diagnosis.collect import Collector

_LINE_CAP = 2000  # characters of one log line kept in observations
_STRONG = (Sign.PANIC, Sign.AUTH, Sign.EXEC, Sign.OOM, Sign.BAD_CONFIG, Sign.NO_HOST)


def anomalous_services(obs: Observations, handler: Handler) -> list[str]:
    """Services with something visibly wrong, before reading logs (pods, Service, signals)."""
    t = handler.thresholds
    out = []
    for name in sorted(obs.service_names):
        s = pod_symptoms(obs.pods.get(name, ()))
        bad_signal = _bad_signal(obs.signals.get(name), t)
        bad_service = _bad_service(obs, name)
        lacking = _lacks_replicas(obs.workloads.get(name))
        if s.intrinsic or s.restarts or s.ready < s.total or bad_signal or bad_service or lacking:
            out.append(name)
    return out


def _bad_signal(sig: GoldenSignals | None, t: Thresholds) -> bool:
    return (
        sig is not None
        and sig.request_rate >= t.min_request_rate
        and (sig.error_ratio >= t.error_ratio or sig.latency_p99_ms >= t.latency_p99_ms)
    )


def _bad_service(obs: Observations, name: str) -> bool:
    services = obs.k8s_services_for(name)
    spec = obs.specs.get(name)
    ports = spec.container_ports() if spec is not None else set()
    # A Service that sends traffic to a port no container listens on is broken by its
    # own state, Ready pods or not: that is a symptom before any caller's metrics show it
    # (the same test as the service-target-port rule).
    return any(svc.ready_endpoints == 0 for svc in services) or (
        bool(ports) and any(p.target_port not in ports for svc in services for p in svc.ports)
    )


def _lacks_replicas(w: WorkloadState | None) -> bool:
    return w is not None and (w.ready_replicas < w.replicas or w.replicas == 0)


def _addresses(obs: Observations) -> dict[str, str]:
    out = {}
    for svc in obs.services.values():
        owner = obs.service_for_k8s_service(svc.name) or svc.name
        if svc.cluster_ip:
            out[svc.cluster_ip] = owner
    return out


def _pick_pods(pods: tuple[PodState, ...], limit: int) -> list[PodState]:
    return sorted(pods, key=lambda p: (p.ready, -p.restart_count, p.name))[:limit]


def read_logs(collector: Collector, obs: Observations, handler: Handler) -> list[Item]:
    step = handler.collect.logs
    if step.max_pods == 0:
        return []
    names = obs.service_names | set(obs.services)
    blamer = Blamer(names, _addresses(obs))
    stages = _stages(obs, anomalous_services(obs, handler))
    order = [w for w in handler.widen if w in stages]
    done: set[str] = set()
    items: list[Item] = []
    budget = step.max_pods
    while budget > 0:
        service = _next(stages, order, done)
        if service is None:
            break
        done.add(service)
        for pod in _pick_pods(obs.pods.get(service, ()), min(step.pods_per_service, budget)):
            budget -= 1
            for tail in _read_pod(collector, obs, handler, service, pod):
                obs.logs.setdefault(service, []).append(tail)
                items.append(_item(collector, obs, tail, step.keep_lines))
                blamed = _add_blamed_edges(obs, blamer, names, service, tail)
                if Widen.CALLEES in order:
                    # Next: what this tail blames, nearest (first named) first.
                    stages[Widen.CALLEES].extendleft(reversed([b for b in blamed if b not in done]))
    return items


def _stages(obs: Observations, anomalous: list[str]) -> dict[Widen, deque[str]]:
    """The services each widening stage offers, in the order it offers them."""
    start = list(obs.alerting) or anomalous[:1]
    return {
        Widen.SERVICE: deque(start),
        Widen.CALLEES: deque(s for a in start for s in downstream(obs, a) if s in anomalous),
        Widen.CALLERS: deque(s for a in start for s in upstream(obs, a)),
        Widen.NAMESPACE: deque(anomalous),
    }


def _add_blamed_edges(
    obs: Observations, blamer: Blamer, names: set[str], service: str, tail: LogTail
) -> list[str]:
    """The known services this tail's error lines blame, each recorded as a callee."""
    blamed = [b for b in _blame(blamer, tail) if b in names]
    for name in blamed:
        add_edge(obs, service, name, "logs")
    return blamed


def _next(stages: dict[Widen, deque[str]], order: list[Widen], done: set[str]) -> str | None:
    for stage in order:
        queue = stages[stage]
        while queue:
            candidate = queue.popleft()
            if candidate not in done:
                return candidate
    return None


def _read_pod(
    collector: Collector, obs: Observations, handler: Handler, service: str, pod: PodState
) -> list[LogTail]:
    step = handler.collect.logs
    ns = obs.scope.namespace
    tails = []
    containers = [c for c in pod.containers if c.restart_count or not c.ready] or list(
        pod.containers[:1]
    )
    for c in containers[:2]:
        never_ran = c.state == "waiting" and c.restart_count == 0
        variants = ([] if never_ran else [False]) + (
            [True] if step.previous and c.restart_count > 0 else []
        )
        for previous in variants:
            what = f"logs of {pod.name}/{c.name}{' (previous)' if previous else ''}"
            read = _tail(collector, ns, pod.name, c.name, tail=step.tail_lines, previous=previous)
            lines = [
                clip(str(line), _LINE_CAP)
                for line in collector.read_many(obs, what, read)[-step.tail_lines :]
            ]
            older = 0
            if step.since_s:
                lines, older = since(lines, obs.started_at - timedelta(seconds=step.since_s))
            key = f"log:{pod.name}:{c.name}" + (":previous" if previous else "")
            obs.cite(f"logs:{service}", key)
            tails.append(
                LogTail(
                    service=service,
                    pod=pod.name,
                    container=c.name,
                    previous=previous,
                    lines=tuple(lines),
                    key=key,
                    older=older,
                )
            )
    return tails


def _tail(
    collector: Collector, ns: str, pod: str, container: str, *, tail: int, previous: bool
) -> Callable[[], Sequence[str]]:
    def read() -> Sequence[str]:
        return collector.cluster.pod_logs(
            ns, pod, container=container, tail_lines=tail, previous=previous
        )

    return read


def _blame(blamer: Blamer, tail: LogTail) -> list[str]:
    out: list[str] = []
    for line in tail.lines:
        if not is_error_line(line):
            continue
        for name in blamer.blamed(line, own=tail.service):
            if name not in out:
                out.append(name)
    return out


def _item(collector: Collector, obs: Observations, tail: LogTail, keep: int) -> Item:
    errors = [line for line in tail.lines if is_error_line(line)]
    counts = signs_of(tail.lines)
    strong = [s for s in _STRONG if s in counts]
    # Show the error lines (most recent last) and the very last lines, deduplicated.
    shown = list(dict.fromkeys(errors[-keep:] + list(tail.lines[-3:])))
    first = next(
        (line for line in errors if classify(line) in strong), errors[-1] if errors else ""
    )
    which = "previous container log" if tail.previous else "log"
    summary = f"{tail.pod} {which}: " + (
        f"{len(errors)} error line{'' if len(errors) == 1 else 's'}, e.g. {first.strip()}"
        if errors
        else "no error lines"
    )
    if tail.older:
        summary += f" ({tail.older} older lines from before the incident not used)"
    relevance = 0.85 if strong else (0.65 if errors else 0.1)
    return make_item(
        key=tail.key,
        kind=EvidenceKind.LOG,
        source=f"logs/{obs.scope.namespace}/{tail.pod}/{tail.container}"
        + ("?previous=true" if tail.previous else ""),
        summary=summary,
        service=tail.service,
        detail=clip_lines(shown, keep + 3),
        redactor=collector.redactor,
        relevance=relevance,
    )
