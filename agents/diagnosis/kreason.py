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

from agents.diagnosis.facts import Facts

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
    pods = facts.obs.pods.get(service, ())
    waiting = Counter(
        c.reason for p in pods for c in p.containers if c.state == "waiting" and c.reason
    )
    for reason in _TELLING_WAITING:
        if waiting[reason]:
            return reason
    terminated = Counter(c.last_terminated_reason for p in pods for c in p.containers)
    if terminated["OOMKilled"]:
        return "OOMKilled"
    if any(reason.startswith("Init:") for reason in waiting):
        return next(r for r in waiting if r.startswith("Init:"))
    if waiting["CrashLoopBackOff"]:
        return "CrashLoopBackOff"
    if any(p.unschedulable_message for p in pods):
        return "FailedScheduling"
    warnings = {e.reason for e in facts.events(service) if e.type == "Warning"}
    for reason in _TELLING_EVENTS:
        if reason in warnings:
            return reason
    workload = facts.obs.workloads.get(service)
    if workload is not None and workload.conditions.get("Progressing") == "False":
        return "ProgressDeadlineExceeded"  # the only reason the controller sets it False
    return None
