"""Pod and workload states read as symptoms: what is wrong with a service's pods, in words
and as flags the reasoner can test."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.model import PodState, WorkloadState

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
    pull: list[str] = []
    start: list[str] = []
    config: list[str] = []
    unsched: list[str] = []
    messages: list[str] = []
    crash = oom = False
    images: list[str] = []
    for pod in pods:
        if pod.unschedulable_message:
            unsched.append(pod.unschedulable_message)
        for c in pod.containers:
            if c.image not in images:
                images.append(c.image)
            reason = c.reason or ""
            message = c.message or ""
            if reason in PULL_REASONS:
                pull.append(f"{reason}: {message}".strip(": "))
            elif reason in START_REASONS or (
                c.last_terminated_reason in START_REASONS and c.state != "running"
            ):
                start.append(f"{reason or c.last_terminated_reason}: {message}".strip(": "))
            elif reason in CONFIG_REASONS:
                config.append(f"{reason}: {message}".strip(": "))
            if reason == "CrashLoopBackOff" or (
                c.restart_count > 0 and c.last_terminated_reason not in (None, "Completed")
            ):
                crash = True
            if reason == "OOMKilled" or c.last_terminated_reason == "OOMKilled":
                oom = True
            if message and message not in messages:
                messages.append(message)
    return PodSymptoms(
        total=len(pods),
        ready=sum(1 for p in pods if p.ready),
        restarts=sum(p.restart_count for p in pods),
        pull=tuple(pull),
        start=tuple(start),
        config=tuple(config),
        crash=crash,
        oom=oom,
        unschedulable=tuple(unsched),
        pending=sum(1 for p in pods if p.phase == "Pending"),
        images=tuple(images),
        messages=tuple(messages[:5]),
    )


def describe_pod(pod: PodState) -> str:
    parts = [f"{pod.name}: {pod.phase}, {'ready' if pod.ready else 'NOT ready'}"]
    if pod.node:
        parts.append(f"node {pod.node}")
    if pod.unschedulable_message:
        parts.append(f"unschedulable: {pod.unschedulable_message}")
    for c in pod.containers:
        text = f"[{c.name}] {c.state}"
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
