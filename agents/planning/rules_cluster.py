"""Objects around the workloads: a ResourceQuota that refuses pods, a node nobody may use.

The quota fix is a merge patch of `spec.hard`: back to the last known good when the journal
has one, else the refused resource raised to what is used plus what the blocked workload still
needs, read from the quota's status and the FailedCreate events ("requested: pods=1, used:
pods=14, limited: pods=14"). A quota the journal saw created has "no limits" as its last known
good: the patch lifts the limit that refuses the pods (the object and its other limits stay,
for its owner to decide on; Undo puts it back). Raising it instead leaves a limit nobody chose.
"""

from __future__ import annotations

import re
from typing import Any

from agents.actions import CordonNode, MergePatch
from agents.kubeparse import quantity_bytes, quantity_millis
from agents.model import JsonObject, KubeObject
from agents.planning.context import Context
from agents.planning.drafts import NOTHING, Draft, Options, Tier
from agents.planning.paths import Aspect, cpu_quantity, literal, memory_quantity, short
from agents.planning.plan import Escalation
from agents.planning.subject import UNKNOWN, Subject, was

_PAIR = re.compile(r"(?P<name>[\w./-]+)=(?P<value>[\w.]+)")
_REQUESTED = re.compile(r"requested:\s*(?P<pairs>[^;]*?)(?:,\s*used:|$)")


def _hard(quota: KubeObject) -> dict[str, str]:
    hard = (quota.body.get("spec") or {}).get("hard") or {}
    return {str(k): str(v) for k, v in hard.items()}


def quota_options(ctx: Context, subject: Subject) -> Options:
    suspect, field = subject.suspect, subject.field
    if suspect is None or field is None or field.aspect is not Aspect.QUOTA_HARD:
        return NOTHING
    quota = ctx.get("ResourceQuota", suspect.name)
    if quota is None:
        return NOTHING
    live = _hard(quota)

    def from_journal(body: JsonObject) -> Any:
        if not body:
            return {}  # before its creation: no limits at all
        hard = (body.get("spec") or {}).get("hard")
        return {str(k): str(v) for k, v in hard.items()} if isinstance(hard, dict) else UNKNOWN

    def from_text(text: str) -> Any:
        value = literal(text)
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        if field.key and field.key in live:
            return {**live, field.key: str(value)}
        return UNKNOWN

    drafts: list[Draft] = []
    known = was(ctx, suspect, from_journal, from_text=from_text)
    if known is not None and known.value != live:
        keys = sorted(set(live) | set(known.value))
        if not known.value and field.key in live:
            keys = [field.key]  # a quota created whole: lift only the limit that refuses pods
        patch = {k: known.value.get(k) for k in keys}
        drafts.append(
            Draft(
                tier=Tier.RESTORE,
                actions=(_patch(quota, patch, "restore the quota's last known good limits"),),
                rationale=_restore_rationale(subject, known.value, sorted(patch), known.source),
                grounding=known.grounding,
            )
        )
    raised = _raised(ctx, subject, quota, field.key)
    if raised is not None:
        resource, value, why = raised
        if known is None or known.value.get(resource) != value:
            drafts.append(
                Draft(
                    tier=Tier.DERIVED,
                    actions=(_patch(quota, {resource: value}, f"raise {resource} to {value}"),),
                    rationale=f"{subject.statement()}. {why}; this raises hard {resource} from "
                    f"{live.get(resource)} to {value}.",
                )
            )
    return Options(drafts=tuple(drafts))


def _restore_rationale(
    subject: Subject, value: dict[str, str], keys: list[str], source: str
) -> str:
    if not value:
        return (
            f"{subject.statement()}. The quota did not exist according to {source}; this "
            f"lifts the limit it brought on {', '.join(keys)} (its other limits stay)."
        )
    return (
        f"{subject.statement()}. Its limits were {short(value)} according to {source}; "
        "this puts them back."
    )


def _patch(quota: KubeObject, hard: dict[str, Any], reason: str) -> MergePatch:
    return MergePatch(target=quota.ref, patch={"spec": {"hard": hard}}, reason=reason)


def _raised(
    ctx: Context, subject: Subject, quota: KubeObject, resource: str | None
) -> tuple[str, str, str] | None:
    info = next((q for q in ctx.quotas() if q.name == quota.name), None)
    requested = _requested(ctx, quota)
    resource = resource or next(iter(requested), None)
    if resource is None:
        return None
    hard = _hard(quota).get(resource) or (info.hard.get(resource) if info else None)
    used = (info.used.get(resource) if info else None) or hard
    if hard is None or used is None:
        return None
    missing = _missing_pods(ctx, subject)
    per_pod = requested.get(resource, "1")
    value = _raised_value(resource, hard=hard, used=used, per_pod=per_pod, missing=missing)
    if value is None or value == hard:
        return None
    why = (
        f"{used} {resource} are used and {missing} more pod(s) of "
        f"{subject.hypothesis.service} need {per_pod} each"
    )
    return resource, value, why


def _requested(ctx: Context, quota: KubeObject) -> dict[str, str]:
    """What the pods the quota refused asked for, by resource, from the FailedCreate events."""
    requested: dict[str, str] = {}
    for event in ctx.events():
        if event.reason != "FailedCreate" or quota.name not in event.message:
            continue
        match = _REQUESTED.search(event.message)
        if match is not None:
            requested.update({m["name"]: m["value"] for m in _PAIR.finditer(match["pairs"])})
    return requested


def _missing_pods(ctx: Context, subject: Subject) -> int:
    """How many pods the hypothesis's workload still lacks (at least one)."""
    workload = ctx.workload_for(subject.hypothesis.service)
    missing = 1
    if workload is not None:
        desired = (workload.body.get("spec") or {}).get("replicas")
        have = len(ctx.pods_of(workload))
        missing = max(1, (1 if desired is None else int(desired)) - have)
    return missing


def _raised_value(resource: str, *, hard: str, used: str, per_pod: str, missing: int) -> str | None:
    """The hard limit that fits what is used plus `missing` pods of `per_pod` each, never
    below the current one; None for a resource whose quantities are not understood."""
    if "memory" in resource or "storage" in resource:
        total = quantity_bytes(used) + quantity_bytes(per_pod) * missing
        return memory_quantity(max(total, quantity_bytes(hard)))
    if "cpu" in resource:
        total = quantity_millis(used) + quantity_millis(per_pod) * missing
        return cpu_quantity(max(total, quantity_millis(hard)))
    if used.isdigit() and per_pod.isdigit() and hard.isdigit():  # object counts: pods, ...
        return str(max(int(hard), int(used) + int(per_pod) * missing))
    return None


def node_options(ctx: Context, subject: Subject) -> Options:
    """A cordoned node (spec.unschedulable) is uncordoned; taints are not in the catalog."""
    suspect = subject.suspect
    if suspect is None or suspect.kind != "Node":
        return NOTHING
    node = next((n for n in ctx.nodes() if n.name == suspect.name), None)
    if node is not None and node.unschedulable and "unschedulable" in suspect.field:
        return Options(
            drafts=(
                Draft(
                    tier=Tier.RESTORE,
                    actions=(CordonNode(target=ctx.ref("Node", node.name), cordon=False),),
                    rationale=f"{subject.statement()}. Node {node.name} is cordoned; "
                    "uncordoning it lets the scheduler place pods there again.",
                ),
            )
        )
    if "taint" in suspect.field:
        return Options(
            escalation=Escalation(
                reason=f"Node {suspect.name}'s taints keep the pods away; Stratus has no "
                "action that changes taints",
                runbook="\n".join(
                    [
                        f"1. See the taints: `kubectl describe node {suspect.name}`.",
                        "2. If a taint was added by mistake, remove it: `kubectl taint nodes "
                        f"{suspect.name} <key>:<effect>-` (check with the node's owner first).",
                        "3. If the taint is intended, give the workload a matching toleration "
                        "in its manifests and roll it out.",
                    ]
                ),
            )
        )
    return NOTHING
