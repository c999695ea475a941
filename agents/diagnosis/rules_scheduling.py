"""Rules for pods kept off nodes by the nodes themselves, not by the workload's own spec.

`rules_pods.unschedulable` blames the pod template (its selector, tolerations or requests).
When the scheduler names an untolerated taint and the same workload's pods were running on
the tainted nodes — still running there, or evicted by the taint manager — the taint came
after them: the scheduler never places a pod on a node whose taint it does not tolerate.
Then the node changed, not the workload, and the suspect is the node's taints.

Likewise a pod refused by the LimitRanger admission plugin ("maximum memory usage per
Container is 256Mi, but limit is 512Mi") is kept out by the namespace's LimitRange policy,
and one that waits for an unbound claim by the volumes its template mounts. Pods stranded on
a node that is not Ready point at the node.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agents.diagnosis.candidate import (
    VIRT_MISCONFIG,
    VIRT_OPERATION,
    Candidate,
    touch_keys,
    workload_suspect,
)
from agents.diagnosis.facts import Facts
from agents.diagnosis.suspect import Suspect

#: "3 node(s) had untolerated taint {dedicated: batch}" (the value may be empty).
_TAINT = re.compile(r"untolerated taint \{([^:{}]+):\s*([^{}]*)\}")


def node_taint(facts: Facts, service: str) -> Iterator[Candidate]:
    """Nodes gained a taint after the workload's pods were placed ⇒ the node is misconfigured."""
    found = _untolerated_taint(facts, service)
    if found is None:
        return
    key, value, texts = found
    tainted = [n for n in facts.obs.nodes if any(_is(t, key, value) for t in n.taints)]
    if not tainted:
        return
    names = {n.name for n in tainted}
    how = _placed_before_the_taint(facts, service, names)
    if how is None:
        return  # nothing shows the taint is newer than the workload
    if facts.touched(None, service, r"toleration"):
        return  # the workload's tolerations changed: the pod template rule owns that
    taint = next(t for t in tainted[0].taints if _is(t, key, value))
    yield Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        # Above the pod-template reading of the same message: this one rests on more state.
        confidence=0.93,
        explanation=(
            f"{service}'s pods cannot be scheduled: {len(tainted)} node(s) carry taint "
            f"{taint} that they do not tolerate, and it is newer than the workload ({how})"
        ),
        rule="node-taint",
        keys=(*facts.keys(service, "pods", "events"), "nodes"),
        suspect=Suspect(
            kind="Node",
            name=sorted(names)[0],
            field="spec.taints",
            current=taint,
            reason=texts[0],
        ),
    )


def _untolerated_taint(facts: Facts, service: str) -> tuple[str, str, list[str]] | None:
    """The taint the scheduler names (key, value) and the messages it read them from."""
    s = facts.symptoms[service]
    texts = list(s.unschedulable) + [
        e.message for e in facts.events(service) if e.reason == "FailedScheduling"
    ]
    match = next((m for m in map(_TAINT.search, texts) if m), None)
    if match is None:
        return None
    return match.group(1).strip(), match.group(2).strip(), texts


def _placed_before_the_taint(facts: Facts, service: str, names: set[str]) -> str | None:
    """How the workload's pods show they were on the tainted nodes first (None: they don't)."""
    placed = [
        p for p in facts.obs.pods.get(service, ()) if p.node in names and p.phase == "Running"
    ]
    if placed:
        return f"{placed[0].name} still runs on {placed[0].node}"
    evicted = [e for e in facts.events(service) if e.reason == "TaintManagerEviction"]
    if evicted:
        return f"its pods were evicted by the taint ({len(evicted)} eviction event(s))"
    return None


def _is(taint: str, key: str, value: str) -> bool:
    """Whether a "key=value:Effect" taint is the scheduler's {key: value}."""
    head = taint.rsplit(":", 1)[0]
    k, _, v = head.partition("=")
    return k == key and v == value


#: The LimitRanger admission plugin's refusal, as the ReplicaSet's FailedCreate repeats it.
_LIMITED = re.compile(
    r"is forbidden: \[?(maximum|minimum) ([\w./-]+) usage per (Container|Pod) is ([^,\s]+?)"
    r"(?:,? but (?:limit|request) is ([^,\]\s]+)|\.\s)",
    re.I,
)
#: The refusal does not name the LimitRange: every one in the namespace applies to each pod.
ANY_LIMIT_RANGE = "*"


def limit_range(facts: Facts, service: str) -> Iterator[Candidate]:
    """A LimitRange refuses the workload's pods ⇒ virtualization misconfiguration of the
    namespace's limits (the pod template did not change: the policy did)."""
    for e in facts.events(service):
        match = _LIMITED.search(e.message)
        if e.reason != "FailedCreate" or match is None:
            continue
        bound, resource, per, value, observed = match.groups()
        yield Candidate(
            service=service,
            category=VIRT_MISCONFIG,
            confidence=0.9,
            explanation=(
                f"{service} cannot create pods: a LimitRange sets the {bound} {resource} per "
                f"{per} to {value}" + (f" and the pods ask for {observed}" if observed else "")
            ),
            rule="limit-range",
            keys=tuple(facts.keys(service, "events", "pods")),
            suspect=Suspect(
                kind="LimitRange",
                namespace=facts.ns,
                name=ANY_LIMIT_RANGE,
                field=f"spec.limits[type={per}].{bound[:3].lower()}.{resource}",
                current=value,
                reason=e.message,
            ),
        )
        return


#: The VolumeBinding PreFilter's reasons: the claim is missing, or not bound yet.
_CLAIM = re.compile(
    r"pod has unbound immediate PersistentVolumeClaims|persistentvolumeclaim \"([^\"]+)\" not found"
)


def unbound_claim(facts: Facts, service: str) -> Iterator[Candidate]:
    """Pods wait for a claim that is missing or cannot bind ⇒ the pod template's volumes (or
    the claim they name) are misconfigured; the scheduler tried no node at all."""
    s = facts.symptoms[service]
    texts = list(s.unschedulable) + [
        e.message for e in facts.events(service) if e.reason == "FailedScheduling"
    ]
    text = next((t for t in texts if _CLAIM.search(t)), None)
    if text is None:
        return
    suspect, touches = workload_suspect(
        facts,
        service,
        "spec.template.spec.volumes",
        None,
        touch_pattern=r"volume|persistentVolumeClaim",
        reason=text,
    )
    yield Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        # Above the generic reading of the same message (which names a node selector).
        confidence=0.92,
        explanation=f"{service}'s pods wait for a PersistentVolumeClaim that does not bind: {text}",
        rule="unbound-claim",
        keys=(*facts.keys(service, "pods", "events"), *touch_keys(touches)),
        suspect=suspect,
    )


def node_not_ready(facts: Facts, service: str) -> Iterator[Candidate]:
    """The service's pods sit on a node that is not Ready ⇒ the node failed (its kubelet
    stopped reporting, or the machine is gone): an operation failure of the platform. Their
    containers may still run, but the node's pods are taken out of service and, after their
    toleration, evicted; nothing in the namespace changed."""
    down = {n.name for n in facts.obs.nodes if not n.ready}
    if not down:
        return
    stranded = [p for p in facts.obs.pods.get(service, ()) if p.node in down and not p.ready]
    if not stranded:
        return
    healthy_elsewhere = [
        p for p in facts.obs.pods.get(service, ()) if p.node not in down and p.ready
    ]
    if healthy_elsewhere:
        return  # another replica serves: the node is not why this service fails
    node = sorted({str(p.node) for p in stranded})[0]
    yield Candidate(
        service=service,
        category=VIRT_OPERATION,
        confidence=0.93,
        explanation=(
            f"{service}'s pods ({', '.join(p.name for p in stranded)}) are on node {node}, "
            "which is not Ready: its kubelet no longer reports, so they are out of service "
            "until the node returns or they are evicted"
        ),
        rule="node-not-ready",
        keys=(*facts.keys(service, "pods", "events"), "nodes"),
        suspect=Suspect(
            kind="Node",
            name=node,
            field="status.conditions[type=Ready]",
            current="not Ready",
            reason=f"node {node} is not Ready",
        ),
    )


RULES = (node_taint, limit_range, unbound_claim, node_not_ready)
