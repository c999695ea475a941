"""Pod and workload states read as symptoms: what is wrong with a service's pods, in words
and as flags the reasoner can test."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.model import ContainerState, PodState, WorkloadState

PULL_REASONS = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
)
START_REASONS = frozenset(
    {"RunContainerError", "CreateContainerError", "ContainerCannotRun", "StartError"}
)
CONFIG_REASONS = frozenset({"CreateContainerConfigError"})
CRASH_REASONS = frozenset({"CrashLoopBackOff", "Error"})


@dataclass(frozen=True, slots=True, kw_only=True)
class PodSymptoms:
    """Flags over all pods of one service."""

    total: int = 0
    ready: int = 0
    restarts: int = 0
    pull: tuple[str, ...] = ()  # messages
    start: tuple[str, ...] = ()
    config: tuple[str, ...] = ()
    crash: bool = False
    oom: bool = False
    unschedulable: tuple[str, ...] = ()
    pending: int = 0
    images: tuple[str, ...] = ()
    messages: tuple[str, ...] = field(default_factory=tuple)

    @property
    def intrinsic(self) -> bool:
        """Something is wrong with the pods themselves (not only with what they call)."""
        return bool(
            self.pull or self.start or self.config or self.crash or self.oom or self.unschedulable
        )


def pod_symptoms(pods: Sequence[PodState]) -> PodSymptoms:
    tally = _Tally()
    for pod in pods:
        if pod.unschedulable_message:
            tally.unschedulable.append(pod.unschedulable_message)
        for c in pod.containers:
            tally.add(c)
    return PodSymptoms(
        total=len(pods),
        ready=sum(1 for p in pods if p.ready),
        restarts=sum(p.restart_count for p in pods),
        pull=tuple(tally.pull),
        start=tuple(tally.start),
        config=tuple(tally.config),
        crash=tally.crash,
        oom=tally.oom,
        unschedulable=tuple(tally.unschedulable),
        pending=sum(1 for p in pods if p.phase == "Pending"),
        images=tuple(tally.images),
        messages=tuple(tally.messages[:5]),
    )


@dataclass(slots=True)
class _Tally:
    """What `pod_symptoms` gathers container by container, in the order it meets them."""

    pull: list[str] = field(default_factory=list)
    start: list[str] = field(default_factory=list)
    config: list[str] = field(default_factory=list)
    unschedulable: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    crash: bool = False
    oom: bool = False

    def add(self, c: ContainerState) -> None:
        if c.image not in self.images:
            self.images.append(c.image)
        self._file_reason(c)
        self.crash = self.crash or _crashed(c)
        self.oom = self.oom or c.reason == "OOMKilled" or c.last_terminated_reason == "OOMKilled"
        message = c.message or ""
        if message and message not in self.messages:
            self.messages.append(message)

    def _file_reason(self, c: ContainerState) -> None:
        """File the container's reason under pull, start or config (at most one of them)."""
        reason = c.reason or ""
        message = c.message or ""
        if reason in PULL_REASONS:
            self.pull.append(f"{reason}: {message}".strip(": "))
        elif reason in START_REASONS or (
            c.last_terminated_reason in START_REASONS and c.state != "running"
        ):
            self.start.append(f"{reason or c.last_terminated_reason}: {message}".strip(": "))
        elif reason in CONFIG_REASONS:
            self.config.append(f"{reason}: {message}".strip(": "))


def _crashed(c: ContainerState) -> bool:
    return c.reason == "CrashLoopBackOff" or (
        c.restart_count > 0 and c.last_terminated_reason not in (None, "Completed")
    )


def describe_pod(pod: PodState) -> str:
    parts = [f"{pod.name}: {pod.phase}, {'ready' if pod.ready else 'NOT ready'}"]
    if pod.node:
        parts.append(f"node {pod.node}")
    if pod.unschedulable_message:
        parts.append(f"unschedulable: {pod.unschedulable_message}")
    tagged = [*(("init ", c) for c in pod.init_containers), *(("", c) for c in pod.containers)]
    for tag, c in tagged:
        text = f"[{tag}{c.name}] {c.state}"
        if c.reason:
            text += f" {c.reason}"
        if c.message:
            text += f" ({c.message})"
        if c.restart_count:
            text += f", restarts {c.restart_count}"
        if c.last_terminated_reason:
            text += f", last terminated {c.last_terminated_reason}"
            if c.last_exit_code is not None:
                text += f" exit {c.last_exit_code}"
        text += f", image {c.image}"
        parts.append(text)
    return "; ".join(parts)


def describe_workload(w: WorkloadState) -> str:
    return (
        f"{w.kind}/{w.name}: desired {w.replicas}, ready {w.ready_replicas}, available "
        f"{w.available_replicas}, updated {w.updated_replicas}"
        + (f", revision {w.revision}" if w.revision is not None else "")
    )


def short_reason(s: PodSymptoms) -> str:
    if s.pull:
        return "image pull failing"
    if s.start:
        return "container cannot start"
    if s.config:
        return "container config error"
    if s.oom:
        return "OOMKilled"
    if s.crash:
        return "crash-looping"
    if s.unschedulable:
        return "unschedulable"
    if s.total and s.ready < s.total:
        return f"{s.total - s.ready}/{s.total} pods not ready"
    return "pods healthy"
