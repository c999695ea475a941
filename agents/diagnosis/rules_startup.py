"""Rules for pods that cannot start for a reason written in their spec, where the pod rules'
reading would name the wrong kind of fault, or nothing: a registry that refuses the pull for
want of credentials (not a missing tag), an init container that keeps failing (not the app
itself), a readiness probe aimed at a port the container does not serve.

Each states the principle of docs/taxonomy.md it applies; none knows a scenario, a fault or
a service by name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agents.diagnosis.candidate import (
    APP_MISCONFIG,
    VIRT_MISCONFIG,
    Candidate,
    container_of,
    container_suspect,
    touch_keys,
    workload_suspect,
)
from agents.diagnosis.facts import Facts
from agents.diagnosis.state import PULL_REASONS
from agents.model import ContainerState

#: What registries and containerd say when a pull lacks (valid) credentials.
_UNAUTHORIZED = re.compile(
    r"401 Unauthorized|403 Forbidden|pull access denied|may require authorization|"
    r"authorization failed|no basic auth credentials|failed to authorize",
    re.I,
)


def pull_unauthorized(facts: Facts, service: str) -> Iterator[Candidate]:
    """The registry refuses the pull for want of credentials ⇒ the pod spec lacks the
    registry's pull secret (or points at a registry it has no account for): a
    misconfiguration of the workload, not an image that does not exist."""
    s = facts.symptoms[service]
    if not s.pull:
        return
    # The registry's answer is in ErrImagePull's message and the kubelet's Failed events; an
    # ImagePullBackOff status only says it is backing off.
    pulls = [
        e.message
        for e in facts.events(service)
        if e.type == "Warning" and e.message.startswith("Failed to pull image")
    ] + [m for m in s.pull if "Back-off pulling image" not in m]
    refused = [m for m in pulls if _UNAUTHORIZED.search(m)]
    if not refused or len(refused) < len(pulls):
        return  # some pulls fail for another reason: the image-pull rule reads those
    c = container_of(facts, service, PULL_REASONS)
    suspect, touches = container_suspect(
        facts,
        service,
        c,
        "image",
        c.image if c else None,
        touch_pattern=r"image|imagePullSecrets",
        reason="the registry refuses the pull without credentials the pod does not have",
    )
    yield Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        # Above the image-pull rule's reading of the same failure (0.93/0.88): the registry's
        # answer says which of the two it is.
        confidence=0.95 if touches else 0.9,
        explanation=f"{service}'s image pull is refused for lack of credentials ({refused[0]})"
        + (" right after its image or pull secrets changed" if touches else ""),
        rule="pull-unauthorized",
        keys=(*facts.keys(service, "pods", "events"), *touch_keys(touches)),
        suspect=suspect,
    )


def _failing_init(facts: Facts, service: str) -> tuple[int, ContainerState] | None:
    """The first init container of a pod of the service that exited non-zero and is being
    retried (or has given up): every container after it waits."""
    for pod in facts.obs.pods.get(service, ()):
        for index, c in enumerate(pod.init_containers):
            if c.state == "running":
                break  # this one is still running; the ones after it have not started
            if c.reason in ("CrashLoopBackOff", "Error") or (
                c.state == "waiting" and c.last_terminated_reason == "Error"
            ):
                return index, c
    return None


def init_failure(facts: Facts, service: str) -> Iterator[Candidate]:
    """An init container keeps exiting non-zero ⇒ the pods never start their containers.
    What it runs is a start-up gate written into the pod template (a command checking a
    dependency's address, a migration): the command or the address it checks is wrong, an
    application misconfiguration like a command naming a missing binary or a database host
    that does not resolve."""
    found = _failing_init(facts, service)
    if found is None:
        return
    index, c = found
    suspect, touches = workload_suspect(
        facts,
        service,
        f"spec.template.spec.initContainers[{index}]",
        None,
        touch_pattern=r"initContainers",
        reason=f"init container {c.name} fails, so the pod never starts",
    )
    exit_text = f" (exit {c.last_exit_code})" if c.last_exit_code is not None else ""
    yield Candidate(
        service=service,
        category=APP_MISCONFIG,
        confidence=0.92 if touches else 0.85,
        explanation=f"{service}'s init container {c.name} keeps failing{exit_text}: its pods "
        "never start their containers"
        + (" — the init container was changed just before" if touches else ""),
        rule="init-failure",
        keys=(*facts.keys(service, "pods", "events", "logs"), *touch_keys(touches)),
        suspect=suspect,
    )


#: The port a failed tcpSocket/httpGet probe dialled, from the kubelet's Unhealthy event.
_PROBE_DIAL = re.compile(r"(Readiness|Startup) probe failed:.*?dial tcp [^:\s]+:(\d+): connect")


def probe_misaimed(facts: Facts, service: str) -> Iterator[Candidate]:
    """Pods run but never turn Ready, and their readiness probe dials a port no container of
    the pod declares ⇒ the probe checks the wrong port: a workload misconfiguration (the
    process is fine; the kubelet is looking in the wrong place)."""
    s = facts.symptoms[service]
    spec = facts.obs.specs.get(service)
    if spec is None or not s.total or s.ready >= s.total:
        return
    declared = {port for c in spec.containers for port, _ in c.ports}
    dialled = sorted(
        {
            int(m.group(2))
            for e in facts.events(service)
            if e.type == "Warning" and (m := _PROBE_DIAL.search(e.message))
        }
        - declared
    )
    if not declared or not dialled:
        return
    c = spec.containers[0]
    suspect, touches = container_suspect(
        facts,
        service,
        c,
        "readinessProbe",
        None,
        touch_pattern=r"readinessProbe|startupProbe",
        reason=f"the probe dials port {dialled[0]}, which the container does not serve",
    )
    yield Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        confidence=0.9 if touches else 0.8,
        explanation=f"{service}'s pods never turn Ready: the readiness probe dials port "
        f"{dialled[0]}, but the container serves {', '.join(map(str, sorted(declared)))}",
        rule="probe-misaimed",
        keys=(*facts.keys(service, "pods", "events"), *touch_keys(touches)),
        suspect=suspect,
    )


RULES = (pull_unauthorized, init_failure, probe_misaimed)

__all__ = ["RULES"]
