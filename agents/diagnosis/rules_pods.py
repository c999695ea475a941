"""Rules over a service's own pods and workload: images, commands, crashes, memory,
scheduling, quotas and replicas. Each rule states the principle of docs/taxonomy.md it
applies; none knows a scenario, a fault or a service by name."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

from agents.diagnosis.candidate import (
    APP_CODE,
    APP_MISCONFIG,
    CONTAINERS,
    VIRT_MISCONFIG,
    VIRT_OPERATION,
    Candidate,
    container_of,
    container_suspect,
    touch_keys,
    touch_suspect,
    workload_suspect,
)
from agents.diagnosis.changes import is_controller
from agents.diagnosis.facts import Facts, Touch
from agents.diagnosis.graph import Reference, references
from agents.diagnosis.observe import ContainerSpec, WorkloadSpec
from agents.diagnosis.signs import Sign
from agents.diagnosis.state import CONFIG_REASONS, PULL_REASONS, START_REASONS
from agents.diagnosis.suspect import Suspect
from agents.model import WorkloadState


def _image_suspect(
    facts: Facts, service: str, c: ContainerSpec | None, *, reason: str
) -> tuple[Suspect, list[Touch]]:
    """The suspect when a container's image is to blame: that container's image field (the
    first container's when none is named), and the recorded changes that touched an image."""
    return container_suspect(
        facts, service, c, "image", c.image if c else None, touch_pattern=r"image", reason=reason
    )


def image_pull(facts: Facts, service: str) -> Iterator[Candidate]:
    """A rollout references an image the registry does not have ⇒ operation error."""
    s = facts.symptoms[service]
    if not s.pull:
        return
    c = container_of(facts, service, PULL_REASONS)
    suspect, touches = _image_suspect(facts, service, c, reason="image cannot be pulled")
    yield Candidate(
        service=service,
        category=VIRT_OPERATION,
        confidence=0.93 if touches else 0.88,
        explanation=f"{service} cannot pull its image ({s.pull[0]})"
        + (" right after the image was changed" if touches else ""),
        rule="image-pull",
        keys=(*facts.keys(service, "pods", "events"), *touch_keys(touches)),
        suspect=suspect,
    )


def pod_changed(facts: Facts, service: str) -> Iterator[Candidate]:
    """A controller-owned pod whose image, command or args differ from its owner's template
    was changed outside its controller ⇒ operation error on that pod (a fresh pod from the
    template does not share it)."""
    drifts = facts.drifted(service)
    if not drifts:
        return
    pods = sorted({d.pod for d in drifts})
    d = drifts[0]
    yield Candidate(
        service=service,
        category=VIRT_OPERATION,
        confidence=0.95,
        explanation=f"{len(pods)} pod(s) of {service} were changed outside their controller: "
        f"{d.pod}'s container {d.container} has {d.field} {d.pod_value!r} where its "
        f"{d.owner}'s template has {d.template_value!r}",
        rule="pod-changed",
        keys=tuple(facts.keys(service, "podspec", "pods", "events")),
        suspect=Suspect(
            kind="Pod",
            namespace=facts.ns,
            name=d.pod,
            field=d.path,
            current=d.pod_value,
            last_known_good=d.template_value,
            container=d.container,
            reason=f"changed outside its controller ({d.owner})",
        ),
    )


def start_failure(facts: Facts, service: str) -> Iterator[Candidate]:
    """The command names a binary the image lacks ⇒ application misconfiguration."""
    if facts.only_changed_pods_fail(service):
        return  # the failing pods do not run the template: pod_changed() explains them
    s = facts.symptoms[service]
    texts = list(s.start) + [e.message for e in facts.events(service) if e.type == "Warning"]
    exec_text = next(
        (t for t in texts if re.search(r"exec:|executable file not found|no such file", t)), None
    )
    if not s.start and exec_text is None:
        return
    c = container_of(facts, service, START_REASONS)
    index = c.index if c else 0
    touched_args = facts.touched(None, service, r"\.args")
    field = f"{CONTAINERS}[{index}].args" if touched_args else f"{CONTAINERS}[{index}].command"
    current = (c.args if touched_args else c.command) if c else None
    suspect, touches = workload_suspect(
        facts,
        service,
        field,
        list(current) if current is not None else None,
        touch_pattern=r"\.(command|args)",
        container=c,
        reason="the command names a binary the image does not have",
    )
    yield Candidate(
        service=service,
        category=APP_MISCONFIG,
        confidence=0.9 if exec_text else 0.6,
        explanation=f"{service}'s container cannot start: {exec_text or s.start[0]}",
        rule="start-failure",
        keys=(*facts.keys(service, "pods", "events"), *touch_keys(touches)),
        suspect=suspect,
    )


def config_error(facts: Facts, service: str) -> Iterator[Candidate]:
    """A container's config references are broken (missing ConfigMap/key) ⇒ app misconfig."""
    s = facts.symptoms[service]
    if not s.config:
        return
    c = container_of(facts, service, CONFIG_REASONS)
    message = s.config[0]
    suspect = None
    match = re.search(
        r'configmap "([^"]+)" not found|couldn\'t find key (\S+) in ConfigMap [^/]+/(\S+)', message
    )
    if match and match.group(1):
        suspect = Suspect(
            kind="ConfigMap", namespace=facts.ns, name=match.group(1), field="data", reason=message
        )
    elif match and match.group(3):
        suspect = Suspect(
            kind="ConfigMap",
            namespace=facts.ns,
            name=match.group(3),
            field=f"data.{match.group(2)}",
            reason=message,
        )
    elif c is not None:
        suspect = Suspect(
            kind="Deployment",
            namespace=facts.ns,
            name=service,
            field=f"{CONTAINERS}[{c.index}].env",
            container=c.name,
            reason=message,
        )
    yield Candidate(
        service=service,
        category=APP_MISCONFIG,
        confidence=0.82,
        explanation=f"{service}'s container configuration is broken: {message}",
        rule="config-error",
        keys=tuple(facts.keys(service, "pods", "events", "changes", "drift")),
        suspect=suspect,
    )


def oom(facts: Facts, service: str) -> Iterator[Candidate]:
    """OOMKilled: the memory limit is below the working set ⇒ virtualization misconfig."""
    s = facts.symptoms[service]
    signs = facts.own_signs(service)
    if not s.oom and Sign.OOM not in signs:
        return
    c = container_of(facts, service, frozenset({"OOMKilled"}))
    suspect, touches = container_suspect(
        facts,
        service,
        c,
        "resources.limits.memory",
        c.memory_limit_bytes if c else None,
        touch_pattern=r"limits.*memory|resources",
        reason="containers are OOMKilled",
    )
    yield Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        confidence=(0.9 if touches else 0.8) if s.oom else 0.6,
        explanation=f"{service}'s containers are OOMKilled: the memory limit is below what it uses"
        + (" (lowered by a recent change)" if touches else ""),
        rule="oom",
        keys=(*facts.keys(service, "pods", "events", "logs"), *touch_keys(touches)),
        suspect=suspect,
    )


def crash(facts: Facts, service: str) -> Iterator[Candidate]:
    """A crash loop: read the previous container's words and the recent changes."""
    s = facts.symptoms[service]
    if not s.crash or s.oom or facts.only_changed_pods_fail(service):
        return
    signs = facts.own_signs(service)
    keys = facts.keys(service, "pods", "logs", "events")
    dependency = {Sign.NO_HOST, Sign.UNREACHABLE, Sign.REFUSED, Sign.TIMEOUT} & set(signs)
    if dependency:
        yield from _crash_on_dependency(facts, service, keys)
    elif Sign.BAD_CONFIG in signs or Sign.EXEC in signs:
        yield _crash_on_config(facts, service, signs, keys)
    elif Sign.PANIC in signs or Sign.ERROR in signs:
        yield from _crash_on_panic(facts, service, signs, keys)
    else:
        yield from _crash_unexplained(facts, service, keys)


def _crash_on_config(
    facts: Facts, service: str, signs: dict[Sign, list[str]], keys: list[str]
) -> Candidate:
    """It exits rejecting its configuration: a recent change of a setting is the suspect."""
    touches = [
        t for t in facts.changed_recently(service) if re.search(r"env|data\.|command|args", t.path)
    ]
    line = (signs.get(Sign.BAD_CONFIG) or signs.get(Sign.EXEC) or [""])[0].strip()
    suspect = touch_suspect(facts, touches[0], "setting the program rejects") if touches else None
    return Candidate(
        service=service,
        category=APP_MISCONFIG,
        confidence=0.82,
        explanation=f"{service} exits at start rejecting its configuration: {line}",
        rule="crash-bad-config",
        keys=(*keys, *touch_keys(touches)),
        suspect=suspect,
    )


def _crash_on_panic(
    facts: Facts, service: str, signs: dict[Sign, list[str]], keys: list[str]
) -> Iterator[Candidate]:
    """It panics or logs an error at start: a defect of a new image, else the pods' lot."""
    images = facts.touched(None, service, r"\.image$|image")
    line = (signs.get(Sign.PANIC) or signs.get(Sign.ERROR) or [""])[0].strip()
    c = container_of(facts, service, frozenset({"CrashLoopBackOff", "Error"}))
    suspect, touches = _image_suspect(facts, service, c, reason="the new image crashes at start")
    yield Candidate(
        service=service,
        category=APP_CODE,
        confidence=0.9 if images else 0.55,
        explanation=f"{service} crashes at start ({line})"
        + (" after its image was changed: a defect in the new version" if images else ""),
        rule="crash-panic",
        keys=(*keys, *touch_keys(touches)),
        suspect=suspect,
    )
    if not images:
        yield Candidate(
            service=service,
            category=VIRT_OPERATION,
            confidence=0.3,
            explanation=f"{service}'s pods restart without a spec change",
            rule="pod-failure",
            keys=tuple(keys),
        )


def _crash_unexplained(facts: Facts, service: str, keys: list[str]) -> Iterator[Candidate]:
    """Its logs say nothing: the latest change if there is one, and the pods' lot."""
    touches = facts.changed_recently(service)
    if touches:
        yield Candidate(
            service=service,
            category=APP_MISCONFIG,
            confidence=0.5,
            explanation=f"{service} crash-loops after a change of {touches[0].path}",
            rule="crash-after-change",
            keys=(*keys, *touch_keys(touches)),
            suspect=touch_suspect(facts, touches[0], "changed just before the crash loop"),
        )
    yield Candidate(
        service=service,
        category=VIRT_OPERATION,
        confidence=0.45 if not touches else 0.3,
        explanation=f"{service}'s containers are killed and restart without a spec change",
        rule="pod-failure",
        keys=tuple(keys),
    )


def _crash_on_dependency(facts: Facts, service: str, keys: list[str]) -> Iterator[Candidate]:
    """It dies dialling a dependency: a wrong address in its settings, or the dependency."""
    bad = _unserved_addresses(facts, service)
    if bad:
        yield _dial_candidate(facts, service, keys, *bad[0])
        return
    yield Candidate(
        service=service,
        category=APP_MISCONFIG,
        confidence=0.25,
        explanation=f"{service} crashes because a dependency is unreachable",
        rule="crash-dependency",
        keys=tuple(keys),
        intrinsic=False,
    )


def _unserved_addresses(facts: Facts, service: str) -> list[tuple[Reference, str]]:
    """The service's address settings that name no Service (or no port of it), with why."""
    obs = facts.obs
    spec = obs.specs.get(service)
    bad = []
    for ref in references(obs, spec) if spec else ():
        target = obs.service_for_k8s_service(ref.host) or (
            ref.host if ref.host in obs.service_names else None
        )
        svc = obs.services.get(ref.host)
        if target is None or svc is None:
            bad.append((ref, f"{ref.host} is not a Service of {facts.ns}"))
        elif ref.port is not None and svc.ports and all(p.port != ref.port for p in svc.ports):
            bad.append((ref, f"Service {ref.host} has no port {ref.port}"))
    return bad


def _dial_candidate(
    facts: Facts, service: str, keys: list[str], ref: Reference, why: str
) -> Candidate:
    kind, name = ref.owner
    touches = facts.touched(kind, name, re.escape(ref.key) if ref.config_map else r"env")
    return Candidate(
        service=service,
        category=APP_MISCONFIG,
        confidence=0.9 if touches else 0.82,
        explanation=f"{service} dies dialling {ref.value!r} from {ref.key}: {why}",
        rule="address-misconfig",
        keys=(*keys, *touch_keys(touches)),
        suspect=Suspect(
            kind=kind,
            namespace=facts.ns,
            name=name,
            field=ref.field,
            current=ref.value,
            last_known_good=next((t.old for t in touches if t.old), None),
            container=ref.container.name,
            reason=why,
        ),
    )


def unschedulable(facts: Facts, service: str) -> Iterator[Candidate]:
    """Pods fit no node: selector/affinity/tolerations or requests ⇒ virtualization misconfig."""
    s = facts.symptoms[service]
    texts = list(s.unschedulable) + [
        e.message for e in facts.events(service) if e.reason == "FailedScheduling"
    ]
    if not texts:
        return
    text = texts[0]
    blocker = _scheduling_blocker(text, facts.obs.specs.get(service))
    suspect, touches = workload_suspect(
        facts, service, blocker.field, blocker.current, touch_pattern=blocker.pattern, reason=text
    )
    yield Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        confidence=0.9,
        explanation=f"{service}'s pods cannot be scheduled: {text}",
        rule="unschedulable",
        keys=(*facts.keys(service, "pods", "events"), *touch_keys(touches), "nodes"),
        suspect=suspect,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Blocker:
    """The pod-template field that keeps pods off every node, its value, and the change-path
    pattern that finds who changed it."""

    field: str
    current: object
    pattern: str


def _scheduling_blocker(text: str, spec: WorkloadSpec | None) -> _Blocker:
    """Which field the scheduler's message points at: requests, tolerations, affinity or the
    node selector (the default)."""
    if re.search(r"insufficient (cpu|memory)", text, re.I):
        return _requests_blocker(text, spec)
    if re.search(r"taint", text, re.I) and not re.search(r"affinity|selector", text, re.I):
        return _Blocker(
            field="spec.template.spec.tolerations",
            current=list(spec.tolerations) if spec else None,
            pattern=r"toleration",
        )
    if spec is not None and not spec.node_selector and spec.has_affinity:
        return _Blocker(field="spec.template.spec.affinity", current=None, pattern=r"affinity")
    return _Blocker(
        field="spec.template.spec.nodeSelector",
        current=dict(spec.node_selector) if spec else None,
        pattern=r"nodeSelector|affinity",
    )


def _requests_blocker(text: str, spec: WorkloadSpec | None) -> _Blocker:
    c = spec.containers[0] if spec and spec.containers else None
    resource = "cpu" if re.search(r"insufficient cpu", text, re.I) else "memory"
    return _Blocker(
        field=f"{CONTAINERS}[{c.index if c else 0}].resources.requests.{resource}",
        current=(
            (c.cpu_request_millis if resource == "cpu" else c.memory_request_bytes) if c else None
        ),
        pattern=r"requests",
    )


_QUOTA = re.compile(r"exceeded quota:\s*([\w.-]+)(?:.*?limited:\s*([\w.]+)=)?", re.I)


def quota(facts: Facts, service: str) -> Iterator[Candidate]:
    """A ResourceQuota refuses pod creation ⇒ virtualization misconfiguration of the quota."""
    for e in facts.events(service):
        match = _QUOTA.search(e.message)
        if e.reason != "FailedCreate" or match is None:
            continue
        name, resource = match.group(1).rstrip(","), match.group(2)
        yield Candidate(
            service=service,
            category=VIRT_MISCONFIG,
            confidence=0.9,
            explanation=f"{service} cannot create pods: {e.message}",
            rule="quota",
            keys=(*facts.keys(service, "events", "pods"), f"quota:{name}"),
            suspect=Suspect(
                kind="ResourceQuota",
                namespace=facts.ns,
                name=name,
                field=f"spec.hard.{resource}" if resource else "spec.hard",
                reason="the quota refuses the workload's pods",
            ),
        )
        return


def replicas(facts: Facts, service: str) -> Iterator[Candidate]:
    """Desired replicas lowered by someone who is not a controller ⇒ operation error."""
    w = facts.obs.workloads.get(service)
    spec = facts.obs.specs.get(service)
    kind = spec.kind if spec else (w.kind if w else "Deployment")
    lowered = [t for t in facts.touched(kind, service, r"(^|\.)replicas$") if _lowered_by_hand(t)]
    zero = w is not None and w.replicas == 0
    if not lowered and not zero:
        return
    yield _replicas_candidate(facts, service, kind, w, lowered, zero=zero)


def _replicas_candidate(
    facts: Facts,
    service: str,
    kind: str,
    w: WorkloadState | None,
    lowered: list[Touch],
    *,
    zero: bool,
) -> Candidate:
    blamed = service in facts.blame
    by = next((t.manager for t in lowered if t.manager), None)
    return Candidate(
        service=service,
        category=VIRT_OPERATION,
        confidence=_replicas_confidence(lowered=bool(lowered), zero=zero, blamed=blamed),
        explanation=f"{service}'s desired replicas were lowered to {w.replicas if w else '?'}"
        + (f" by {by}" if by else "")
        + (", and its callers fail to reach it" if blamed else ""),
        rule="replicas",
        keys=(
            *facts.keys(service, "pods", "changes", "drift", "events"),
            *touch_keys(lowered),
            *(facts.blame[service].keys if blamed else []),
        ),
        suspect=Suspect(
            kind=kind,
            namespace=facts.ns,
            name=service,
            field="spec.replicas",
            current=str(w.replicas) if w else None,
            last_known_good=next((t.old for t in lowered if t.old), None),
            reason="replicas lowered by an operator",
        ),
    )


def _lowered_by_hand(t: Touch) -> bool:
    """The change brought replicas down and no controller or autoscaler made it."""
    try:
        down = t.old is not None and t.new is not None and int(t.new) < int(t.old)
    except ValueError:
        down = False
    return down and (t.manager is None or not is_controller(t.manager))


def _replicas_confidence(*, lowered: bool, zero: bool, blamed: bool) -> float:
    return 0.93 if lowered and (zero or blamed) else (0.8 if lowered or blamed else 0.7)


_GONE = ("Killing", "SuccessfulDelete", "Deleted", "Evicted", "Preempted", "TaintManagerEviction")


def pod_churn(facts: Facts, service: str) -> Iterator[Candidate]:
    """Pods deleted or killed and replaced without a spec change ⇒ operation error."""
    if facts.symptoms[service].crash:
        return  # crash() reads restarts; this rule is for pods that were replaced
    pods = facts.obs.pods.get(service, ())
    since = facts.obs.started_at - timedelta(minutes=10)
    young = [p for p in pods if p.created_at is not None and p.created_at >= since]
    killed = [e for e in facts.events(service) if e.reason in _GONE]
    spec_changed = [
        t for t in facts.changed_recently(service) if not re.search(r"(^|\.)replicas$", t.path)
    ]
    if spec_changed or not (killed or (young and service in facts.anomalous)):
        return
    what = f"{killed[0].reason}: {killed[0].message}" if killed else f"{len(young)} new pods"
    yield Candidate(
        service=service,
        category=VIRT_OPERATION,
        confidence=0.7 if killed else 0.5,
        explanation=f"{service}'s pods were deleted or killed and replaced without a spec "
        f"change ({what})",
        rule="pod-churn",
        keys=tuple(facts.keys(service, "events", "pods", "logs")),
    )


RULES = (
    pod_changed,
    image_pull,
    start_failure,
    config_error,
    oom,
    crash,
    unschedulable,
    quota,
    replicas,
    pod_churn,
)
