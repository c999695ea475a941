"""A pod changed outside its controller: delete it, and its controller makes it again.

When the diagnosis names a pod (its image, command or args differ from its owner's template:
someone patched the pod itself), nothing in the workload needs to change — the template is
right. Deleting the pod is the fix and the controller is its inverse: it creates a fresh pod
from the template. Every pod of the workload that differs from its template the same way is
deleted in the same plan (at most K, the planner splits longer plans); a rolling restart,
which also replaces them, is the generic alternative.
"""

from __future__ import annotations

import logging

from agents.actions import DeletePod
from agents.diagnosis.observe import PodDrift, parse_containers
from agents.diagnosis.podspec import drift
from agents.model import JsonObject, KubeObject
from agents.planning.context import Context
from agents.planning.drafts import NOTHING, Draft, Options, Tier
from agents.planning.rules_state import restart
from agents.planning.subject import Subject
from agents.redact import redact_text as basic_redact

logger = logging.getLogger(__name__)

#: Pods of one workload read in full, at most.
MAX_PODS = 20


def _controller(pod: KubeObject) -> str | None:
    for owner in pod.metadata.get("ownerReferences") or []:
        if isinstance(owner, dict) and owner.get("controller"):
            return f"{owner.get('kind')}/{owner.get('name')}"
    return None


def _template_spec(ctx: Context, owner: str) -> JsonObject | None:
    kind, _, name = owner.partition("/")
    body = ctx.owner(kind, name)
    if body is None:
        return None
    spec = ((body.body.get("spec") or {}).get("template") or {}).get("spec")
    return spec if isinstance(spec, dict) else None


def changed_pods(ctx: Context, pods: list[KubeObject]) -> list[tuple[KubeObject, list[PodDrift]]]:
    """The controller-owned pods among `pods` whose containers differ from their owner's
    template, with how."""
    out = []
    for pod in pods:
        owner = _controller(pod)
        template = _template_spec(ctx, owner) if owner else None
        if owner is None or template is None:
            continue
        spec = pod.body.get("spec")
        found = drift(
            pod.name,
            owner,
            parse_containers(spec if isinstance(spec, dict) else {}, basic_redact),
            parse_containers(template, basic_redact),
        )
        if found:
            out.append((pod, found))
    return out


def pod_options(ctx: Context, subject: Subject) -> Options:
    suspect = subject.suspect
    if suspect is None or suspect.kind != "Pod":
        return NOTHING
    named = ctx.get("Pod", suspect.name)
    workload = ctx.workload_for(subject.hypothesis.service)
    others = ctx.pods_of(workload)[:MAX_PODS] if workload is not None else []
    siblings = [ctx.get("Pod", p.name) for p in others]
    pods = {p.name: p for p in [named, *siblings] if p is not None}
    changed = sorted(changed_pods(ctx, list(pods.values())), key=lambda item: item[0].name)
    drafts: list[Draft] = []
    if changed:
        lines = "; ".join(
            f"{pod.name}'s {d.container} {d.field} is {d.pod_value!r} where its {d.owner}'s "
            f"template has {d.template_value!r}"
            for pod, found in changed
            for d in found[:1]
        )
        drafts.append(
            Draft(
                tier=Tier.RESTORE,
                actions=tuple(DeletePod(target=ctx.ref("Pod", pod.name)) for pod, _ in changed),
                rationale=f"{subject.statement()}. {lines}: changed outside the controller. "
                "Deleting the pod lets its controller create a fresh one from the unchanged "
                "template (the controller is the undo).",
            )
        )
    else:
        logger.info(
            "planning %s: pod %s no longer differs from its template (or is gone)",
            ctx.incident.id,
            suspect.name,
        )
    if workload is not None and (changed or named is not None):
        drafts.append(restart(ctx, subject, workload))
    return Options(drafts=tuple(drafts))
