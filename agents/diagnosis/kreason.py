"""The Kubernetes reason behind a hypothesis: the word `kubectl describe` shows an operator.

A diagnosis names a category for people who think in faults (`docs/taxonomy.md`); the person
on call searches runbooks and issue trackers by the reason the cluster printed —
`CreateContainerConfigError`, `FailedScheduling`, `OOMKilled`. It is read from the service's
own state, never from what a reasoner said, so it is the same whichever reasoner ranked the
hypotheses. None when the cluster shows no reason (latency on a network path, a callee that
answers with errors): an absent reason is not invented.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from agents.diagnosis.facts import Facts
from agents.model import PodState

#: Waiting reasons that already name the cause; CrashLoopBackOff only says "it keeps dying".
_TELLING_WAITING = (
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "ErrImagePull",
    "ImagePullBackOff",
    "RunContainerError",
    "ContainerCannotRun",
)
#: Warning event reasons, most telling first.
_TELLING_EVENTS = (
    "FailedScheduling",
    "FailedCreate",
    "FailedMount",
    "FailedAttachVolume",
    "ProvisioningFailed",
    "ProgressDeadlineExceeded",
    "Evicted",
    "NodeNotReady",
    "FailedCreatePodSandBox",
    "Unhealthy",
    "BackOff",
)


def kube_reason(facts: Facts, service: str) -> str | None:
    """The most telling of: the pods' container states, their scheduling, the service's
    Warning events, its workload's Progressing condition."""
    pods = facts.obs.pods.get(service, ())
    return (
        _container_reason(pods)
        or ("FailedScheduling" if any(p.unschedulable_message for p in pods) else None)
        or _event_reason(facts, service)
        or _workload_reason(facts, service)
    )


def _container_reason(pods: Sequence[PodState]) -> str | None:
    waiting = Counter(
        c.reason for p in pods for c in p.containers if c.state == "waiting" and c.reason
    )
    for reason in _TELLING_WAITING:
        if waiting[reason]:
            return reason
    terminated = Counter(c.last_terminated_reason for p in pods for c in p.containers)
    if terminated["OOMKilled"]:
        return "OOMKilled"
    init = next((r for r in waiting if r.startswith("Init:")), None)
    if init is not None:
        return init
    return "CrashLoopBackOff" if waiting["CrashLoopBackOff"] else None


def _event_reason(facts: Facts, service: str) -> str | None:
    warnings = {e.reason for e in facts.events(service) if e.type == "Warning"}
    return next((r for r in _TELLING_EVENTS if r in warnings), None)


def _workload_reason(facts: Facts, service: str) -> str | None:
    workload = facts.obs.workloads.get(service)
    if workload is not None and workload.conditions.get("Progressing") == "False":
        return "ProgressDeadlineExceeded"  # the only reason the controller sets it False
    return None
