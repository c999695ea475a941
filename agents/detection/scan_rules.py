"""The scan's rules: cluster state and golden signals in, `Finding`s out. Pure functions.

Each rule names a condition an on-call engineer would page for, and is written so that the
usual noise does not match it:

* a container that restarted once and runs again is not crash-looping (restart threshold);
* Warning events other than FailedCreate are ignored (probe failures, pulls that retried);
* FailedCreate only counts while its workload is still short of replicas, or while its
  rollout is stalled (the new pods are refused while the old ones keep serving);
* durations ("not ready for 2 minutes") are the scanner's `for_s`, applied from the first
  time a condition was observed, so a readiness blip never becomes an alert;
* error ratios and latencies are read over a window, and only for services with traffic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from agents.model import ContainerState, EventRecord, GoldenSignals, PodState, WorkloadState
from agents.redact import redact_text
from agents.severity import Slo

CRASH_REASONS = frozenset({"CrashLoopBackOff", "RunContainerError"})
PULL_REASONS = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName"})
CREATE_REASONS = frozenset({"CreateContainerError", "CreateContainerConfigError"})

CLUSTER = "cluster"  # rule families: a failed read of one keeps its conditions as they were
METRICS = "metrics"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScanConfig:
    not_ready_for_s: float = 120.0
    waiting_for_s: float = 0.0  # crash loops, image pulls: the detector's grace applies
    crashloop_min_restarts: int = 2
    oom_min_restarts: int = 2
    restart_window_s: float = 600.0
    unschedulable_for_s: float = 60.0
    unavailable_for_s: float = 180.0
    failed_create_window_s: float = 600.0
    #: A rollout whose new pods are refused while the old ones serve: not every refusal during
    #: a rolling update is a stall (a surge pod may wait for an old one to go), so it must hold.
    rollout_stalled_for_s: float = 60.0
    slo_for_s: float = 0.0  # the window below already smooths spikes
    slo_window_s: int = 300
    slo: Slo = field(default_factory=Slo)
    critical_error_ratio: float = 0.25
    max_events: int = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One condition observed now; the scanner turns it into an `Alert` once it has held for
    `for_s` seconds."""

    name: str  # the alertname
    namespace: str
    subject: str  # workload, service or pod the condition is about
    severity: str  # critical | warning
    summary: str
    for_s: float
    family: str
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.name, self.subject)


# ----------------------------------------------------------------------------- ownership


#: The label the Deployment controller puts on a ReplicaSet's pods; the ReplicaSet is named
#: `<deployment>-<hash>`.
POD_TEMPLATE_HASH = "pod-template-hash"


class OwnerIndex:
    """Which workload each pod belongs to, answered in one pass over pods and workloads (the
    pairwise selector match it replaces was quadratic: 10k pods x 2k workloads is 20M
    comparisons per scan).

    A pod's controller reference says it first: `StatefulSet/<name>`, or `ReplicaSet/<name>`
    with the pod-template-hash label, whose Deployment is the name without `-<hash>` (the
    link the ReplicaSet's own owner reference would give, without reading ReplicaSets). A pod
    without one (or whose owner is not among the workloads) falls back on selectors, the most
    specific match winning and the earlier workload breaking a tie, found through an index of
    one selector pair per workload."""

    def __init__(self, workloads: Sequence[WorkloadState]) -> None:
        self._by_name: dict[tuple[str, str], WorkloadState] = {}
        self._by_label: dict[tuple[str, str], list[tuple[int, WorkloadState]]] = {}
        for position, wl in enumerate(workloads):
            self._by_name.setdefault((wl.kind, wl.name), wl)
            if wl.selector:
                # A workload matches a pod only if the pod has every pair of its selector,
                # so any one pair (the smallest) finds all the candidates.
                key = min(wl.selector.items())
                self._by_label.setdefault(key, []).append((position, wl))

    def owner_of(self, pod: PodState) -> str:
        """The workload the pod belongs to, else the pod's own name."""
        owner = self._by_reference(pod) or self._by_selector(pod)
        return owner.name if owner is not None else pod.name

    def _by_reference(self, pod: PodState) -> WorkloadState | None:
        kind, _, name = (pod.owner or "").partition("/")
        if kind == "StatefulSet":
            return self._by_name.get(("StatefulSet", name))
        template_hash = pod.labels.get(POD_TEMPLATE_HASH)
        if kind == "ReplicaSet" and template_hash and name.endswith(f"-{template_hash}"):
            return self._by_name.get(("Deployment", name[: -len(template_hash) - 1]))
        return None

    def _by_selector(self, pod: PodState) -> WorkloadState | None:
        best: tuple[int, int, WorkloadState] | None = None  # (-specificity, position, wl)
        for item in pod.labels.items():
            for position, wl in self._by_label.get(item, ()):
                if not all(pod.labels.get(k) == v for k, v in wl.selector.items()):
                    continue
                candidate = (-len(wl.selector), position, wl)
                if best is None or candidate[:2] < best[:2]:
                    best = candidate
        return best[2] if best is not None else None


def owner_of(pod: PodState, workloads: Sequence[WorkloadState]) -> str:
    """The workload `pod` belongs to, else the pod. For many pods, build one `OwnerIndex`."""
    return OwnerIndex(workloads).owner_of(pod)


def workload_of_object(kind: str, name: str, workloads: Sequence[WorkloadState]) -> str:
    """The workload an event's object belongs to: itself, or the Deployment whose name
    prefixes a ReplicaSet's (`geo-5d9c7f` → `geo`)."""
    names = {wl.name for wl in workloads}
    if name in names:
        return name
    if kind in ("ReplicaSet", "Pod"):
        prefixes = [n for n in names if name.startswith(f"{n}-")]
        if prefixes:
            return max(prefixes, key=len)
    return name


# ----------------------------------------------------------------------------- pod rules


def pod_findings(
    namespace: str,
    pods: Sequence[PodState],
    workloads: Sequence[WorkloadState],
    restart_increase: Mapping[tuple[str, str], int],
    config: ScanConfig,
) -> list[Finding]:
    """Not-ready pods, containers stuck waiting, OOM kills, unschedulable pods; per workload
    (pods come and go, the workload is what the incident is about)."""
    found: dict[tuple[str, str, str], Finding] = {}
    not_ready: dict[str, list[str]] = {}
    owners = OwnerIndex(workloads)
    for pod in pods:
        subject = owners.owner_of(pod)
        if pod.phase in ("Succeeded", "Failed"):
            continue
        if pod.unschedulable_message and pod.phase == "Pending":
            _add(
                found,
                Finding(
                    name="PodUnschedulable",
                    namespace=namespace,
                    subject=subject,
                    severity="warning",
                    summary=f"pod {pod.name} cannot be scheduled: {pod.unschedulable_message}",
                    for_s=config.unschedulable_for_s,
                    family=CLUSTER,
                    labels={"pod": pod.name},
                ),
            )
            continue
        waiting = False
        for c in pod.containers:
            finding = _container_finding(
                c,
                namespace=namespace,
                subject=subject,
                pod=pod,
                restart_increase=restart_increase,
                config=config,
            )
            if finding is not None:
                waiting = waiting or finding.name != "ContainerOOMKilled"
                _add(found, finding)
        if pod.phase == "Running" and not pod.ready and not waiting:
            not_ready.setdefault(subject, []).append(pod.name)
    for subject, names in not_ready.items():
        _add(
            found,
            Finding(
                name="PodNotReady",
                namespace=namespace,
                subject=subject,
                severity="warning",
                summary=f"{len(names)} pod(s) of {subject} not ready: "
                + ", ".join(sorted(names)[:3]),
                for_s=config.not_ready_for_s,
                family=CLUSTER,
                labels={"pod": sorted(names)[0]},
            ),
        )
    return list(found.values())


def _container_finding(
    c: ContainerState,
    *,
    namespace: str,
    subject: str,
    pod: PodState,
    restart_increase: Mapping[tuple[str, str], int],
    config: ScanConfig,
) -> Finding | None:
    reason = c.reason or ""
    if c.state == "waiting" and reason in _STUCK_REASONS:
        return _waiting_finding(
            c, reason, namespace=namespace, subject=subject, pod=pod, config=config
        )
    if (
        c.last_terminated_reason == "OOMKilled"
        and c.restart_count >= config.oom_min_restarts
        and restart_increase.get((pod.name, c.name), 0) > 0
    ):
        return Finding(
            name="ContainerOOMKilled",
            namespace=namespace,
            subject=subject,
            severity="warning",
            summary=f"{c.name} in {pod.name} was OOMKilled ({c.restart_count} "
            f"restart{'' if c.restart_count == 1 else 's'})",
            for_s=0.0,
            family=CLUSTER,
            labels={"pod": pod.name, "container": c.name, "reason": "OOMKilled"},
        )
    return None


#: Waiting reasons that mean the container cannot run (`_waiting_finding` names each).
_STUCK_REASONS = CRASH_REASONS | PULL_REASONS | CREATE_REASONS


def _waiting_finding(
    c: ContainerState,
    reason: str,
    *,
    namespace: str,
    subject: str,
    pod: PodState,
    config: ScanConfig,
) -> Finding | None:
    """A container waiting for one of `_STUCK_REASONS`: crash-looping, failing to pull its
    image or failing to start."""
    detail = f": {redact_text(c.message)[:200]}" if c.message else ""
    if reason in CRASH_REASONS:
        if c.restart_count < config.crashloop_min_restarts:
            return None  # one crash that may yet recover
        name = "ContainerCrashLooping"
        summary = (
            f"{c.name} in {pod.name} is crash-looping ({c.restart_count} "
            f"restart{'' if c.restart_count == 1 else 's'}, "
            f"last exit {c.last_terminated_reason or c.last_exit_code or 'unknown'})"
        )
    elif reason in PULL_REASONS:
        name = "ContainerImagePullFailing"
        summary = f"{c.name} in {pod.name} cannot pull {c.image} ({reason}){detail}"
    else:
        name = "ContainerCreateFailing"
        summary = f"{c.name} in {pod.name} cannot start ({reason}){detail}"
    return Finding(
        name=name,
        namespace=namespace,
        subject=subject,
        severity="critical",
        summary=summary,
        for_s=config.waiting_for_s,
        family=CLUSTER,
        labels={"pod": pod.name, "container": c.name, "reason": reason},
    )


def _add(found: dict[tuple[str, str, str], Finding], finding: Finding) -> None:
    # One finding per (alert, subject): the first pod's text stands for the workload.
    found.setdefault(finding.key, finding)


# ------------------------------------------------------------------------- workload rules


def workload_findings(
    namespace: str, workloads: Sequence[WorkloadState], config: ScanConfig
) -> list[Finding]:
    found = []
    for wl in workloads:
        if wl.replicas <= 0 or wl.available_replicas >= wl.replicas:
            continue
        found.append(
            Finding(
                name="WorkloadReplicasUnavailable",
                namespace=namespace,
                subject=wl.name,
                severity="critical" if wl.available_replicas == 0 else "warning",
                summary=f"{wl.kind} {wl.name}: {wl.available_replicas}/{wl.replicas} "
                "replicas available",
                for_s=config.unavailable_for_s,
                family=CLUSTER,
                labels={"kind": wl.kind},
            )
        )
    return found


def rollout_stalled(wl: WorkloadState) -> bool:
    """Its rollout has not brought every desired replica to the current template: fewer
    updated replicas than desired, a spec change not yet observed, or a progress deadline
    that passed (Progressing=False)."""
    return (
        wl.updated_replicas < wl.replicas
        or wl.observed_generation < wl.generation
        or wl.conditions.get("Progressing") == "False"
    )


def event_findings(
    namespace: str,
    events: Iterable[EventRecord],
    workloads: Sequence[WorkloadState],
    now: datetime,
    config: ScanConfig,
) -> list[Finding]:
    """FailedCreate (a quota or admission refused the controller's pods), or a ReplicaFailure
    condition, on a workload that is short of replicas or whose rollout is stalled. Other
    Warning events are left to diagnosis.

    Short of replicas, it is an outage now. With a stalled rollout the old pods may still
    serve, but the change someone rolled out is not running and never will be: a finding
    once the stall has held `rollout_stalled_for_s` (at once past the progress deadline)."""
    by_name = {wl.name: wl for wl in workloads}
    found: dict[tuple[str, str, str], Finding] = {}
    for subject, (what, message) in _refusals(events, workloads, now, config).items():
        wl = by_name.get(subject)
        if wl is None and workloads:
            continue  # not one of the workloads read: nothing to say it is still short
        finding = _failed_create_finding(namespace, subject, what, message, wl=wl, config=config)
        if finding is not None:
            _add(found, finding)
    return list(found.values())


def _refusals(
    events: Iterable[EventRecord],
    workloads: Sequence[WorkloadState],
    now: datetime,
    config: ScanConfig,
) -> dict[str, tuple[str, str]]:
    """Workload → (object, message) of the first refusal seen: recent FailedCreate Warning
    events, then ReplicaFailure conditions."""
    window = timedelta(seconds=config.failed_create_window_s)
    refusals: dict[str, tuple[str, str]] = {}  # workload → (object, message)
    for event in events:
        if event.reason != "FailedCreate" or event.type != "Warning":
            continue
        if event.last_seen is None or now - event.last_seen > window:
            continue
        subject = workload_of_object(event.object_kind, event.object_name, workloads)
        refusals.setdefault(subject, (f"{event.object_kind} {event.object_name}", event.message))
    for state in workloads:
        if state.conditions.get("ReplicaFailure") == "True":
            refusals.setdefault(
                state.name,
                (f"{state.kind} {state.name}", "ReplicaFailure: its pods cannot be created"),
            )
    return refusals


def _failed_create_finding(
    namespace: str,
    subject: str,
    what: str,
    message: str,
    *,
    wl: WorkloadState | None,
    config: ScanConfig,
) -> Finding | None:
    """The finding for one refusal, or None when the workload is whole again."""
    short = wl is None or wl.available_replicas < wl.replicas
    stalled = wl is not None and rollout_stalled(wl)
    if not (short or stalled):
        return None  # it failed once, then the pods came up
    past_deadline = wl is not None and wl.conditions.get("Progressing") == "False"
    serving = wl if not short else None  # the old pods still serve; the rollout is stuck
    return Finding(
        name="WorkloadFailedCreate",
        namespace=namespace,
        subject=subject,
        severity="warning" if serving is not None else "critical",
        summary=_failed_create_summary(what, message, serving),
        for_s=0.0 if short or past_deadline else config.rollout_stalled_for_s,
        family=CLUSTER,
        labels={"reason": "FailedCreate"},
    )


def _failed_create_summary(what: str, message: str, serving: WorkloadState | None) -> str:
    quota = "exceeded quota" in message
    return (
        f"{what} cannot create pods{' (quota)' if quota else ''}"
        + (
            f"; the rollout is stalled at {serving.updated_replicas}/{serving.replicas} updated"
            if serving is not None
            else ""
        )
        + f": {redact_text(message)[:200]}"
    )


# ---------------------------------------------------------------------------- SLO rules


def slo_findings(
    namespace: str, signals: Mapping[str, GoldenSignals], config: ScanConfig
) -> list[Finding]:
    slo, found = config.slo, []
    for name, s in sorted(signals.items()):
        if s.request_rate < slo.min_request_rate:
            continue  # no traffic, no meaningful ratio
        minutes = config.slo_window_s // 60
        if s.error_ratio > slo.error_ratio:
            found.append(
                Finding(
                    name="ServiceHighErrorRatio",
                    namespace=namespace,
                    subject=name,
                    severity="critical"
                    if s.error_ratio > config.critical_error_ratio
                    else "warning",
                    summary=f"{name}: {s.error_ratio:.0%} of requests fail over {minutes} min "
                    f"(SLO {slo.error_ratio:.0%})",
                    for_s=config.slo_for_s,
                    family=METRICS,
                    labels={"window_s": str(config.slo_window_s)},
                )
            )
        if s.latency_p99_ms > slo.latency_p99_ms:
            found.append(
                Finding(
                    name="ServiceHighLatency",
                    namespace=namespace,
                    subject=name,
                    severity="warning",
                    summary=f"{name}: p99 latency {s.latency_p99_ms:.0f} ms over {minutes} min "
                    f"(SLO {slo.latency_p99_ms:.0f} ms)",
                    for_s=config.slo_for_s,
                    family=METRICS,
                    labels={"window_s": str(config.slo_window_s)},
                )
            )
    return found
