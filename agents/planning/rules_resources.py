"""What a workload's pods may use and where they may run: resource limits and requests,
node selectors, tolerations and affinity.

OOMKilled (memory) and throttled (CPU) containers get their limit raised: back to the last
known good, else above what they are seen using (2× the limit, or 1.5× the observed usage,
rounded to a quantity a person would write and capped at the largest node). Pods no node
accepts get their constraint put back, or the part of it no node satisfies removed, with the
previous revision as the alternative.
"""

from __future__ import annotations

from typing import Any

from agents.actions import SetResources, SetScheduling
from agents.kubeparse import quantity_bytes, quantity_millis
from agents.model import JsonObject, KubeObject
from agents.planning.context import Context, pod_spec_of
from agents.planning.drafts import NOTHING, Draft, Options, Tier
from agents.planning.paths import (
    Aspect,
    cpu_quantity,
    literal,
    memory_quantity,
    round_cpu_up,
    round_memory_up,
    short,
)
from agents.planning.rollback import rollback, rollback_target, template_options
from agents.planning.subject import UNKNOWN, Subject, container_name, container_of, was


def _max_allocatable(ctx: Context, resource: str) -> int | None:
    nodes = [n for n in ctx.nodes() if n.ready]
    values = [
        n.allocatable_memory_bytes if resource == "memory" else n.allocatable_cpu_millis
        for n in nodes
    ]
    best = max(values, default=0)
    return best or None


def limit_options(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """OOMKilled (memory) or throttled (CPU): raise the limit, back to where it was or above
    what the container uses."""
    suspect, field = subject.suspect, subject.field
    assert suspect is not None and field is not None
    resource = "memory" if field.aspect is Aspect.LIMIT_MEMORY else "cpu"
    units = quantity_bytes if resource == "memory" else quantity_millis
    name = container_name(workload, field, suspect)
    resources = (container_of(workload.body, name) or {}).get("resources") or {}
    live_text = (resources.get("limits") or {}).get(resource)
    live = units(live_text) if live_text is not None else 0
    request_text = (resources.get("requests") or {}).get(resource)
    request = units(request_text) if request_text is not None else 0
    cap = _max_allocatable(ctx, resource)

    def from_journal(body: JsonObject) -> Any:
        c = container_of(body, name)
        value = ((c or {}).get("resources") or {}).get("limits", {}).get(resource)
        return str(value) if value is not None else UNKNOWN

    def from_text(text: str) -> Any:
        if resource == "memory" and text.strip().isdigit():
            return memory_quantity(int(text))  # the diagnosis records bytes
        return text if units(text) > 0 else UNKNOWN

    known = was(ctx, suspect, from_journal, from_text=from_text)
    drafts: list[Draft] = []
    if (
        known is not None
        and units(known.value) > live
        and (cap is None or units(known.value) <= cap)
    ):
        drafts.append(
            Draft(
                tier=Tier.RESTORE,
                actions=(
                    SetResources(
                        target=workload.ref, container=name, limits={resource: str(known.value)}
                    ),
                ),
                rationale=f"{subject.statement()}. The {resource} limit of {name} was "
                f"{known.value} according to {known.source}; this raises it back from "
                f"{live_text}.",
                grounding=known.grounding,
            )
        )
    derived = _raised_limit(
        ctx, workload, container=name, resource=resource, live=live, request=request, cap=cap
    )
    if derived is not None and live:
        new, why = derived
        if known is None or units(known.value) != units(new):
            drafts.append(
                Draft(
                    tier=Tier.DERIVED,
                    actions=(
                        SetResources(target=workload.ref, container=name, limits={resource: new}),
                    ),
                    rationale=f"{subject.statement()}. This raises limits.{resource} of {name} "
                    f"from {live_text} to {new} ({why}).",
                )
            )
    return Options(drafts=tuple(drafts))


def _raised_limit(
    ctx: Context,
    workload: KubeObject,
    *,
    container: str,
    resource: str,
    live: int,
    request: int,
    cap: int | None,
) -> tuple[str, str] | None:
    memory, cpu = ctx.usage(workload, container)
    used = memory if resource == "memory" else cpu
    target = 2 * live
    why = "twice the current limit"
    if used and int(used * 1.5) > target:
        target = int(used * 1.5)
        shown = memory_quantity(used) if resource == "memory" else cpu_quantity(used)
        why = f"1.5× the {shown} it was seen using"
    target = max(target, request)
    target = round_memory_up(target) if resource == "memory" else round_cpu_up(target)
    if cap is not None and target > cap:
        target, why = cap, why + ", capped at the largest node's allocatable"
    if target <= live:
        return None
    text = memory_quantity(target) if resource == "memory" else cpu_quantity(target)
    return text, why


def request_options(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """Requests no node can satisfy: back to the requests it was scheduled with."""
    suspect, field = subject.suspect, subject.field
    assert suspect is not None and field is not None
    resource = "memory" if field.aspect is Aspect.REQUEST_MEMORY else "cpu"
    units = quantity_bytes if resource == "memory" else quantity_millis
    name = container_name(workload, field, suspect)
    resources = (container_of(workload.body, name) or {}).get("resources") or {}
    live_text = (resources.get("requests") or {}).get(resource)
    live = units(live_text) if live_text is not None else 0

    def from_journal(body: JsonObject) -> Any:
        c = container_of(body, name)
        value = ((c or {}).get("resources") or {}).get("requests", {}).get(resource)
        return str(value) if value is not None else UNKNOWN

    def from_text(text: str) -> Any:
        return text if units(text) > 0 and not text.strip().isdigit() else UNKNOWN

    known = was(ctx, suspect, from_journal, from_text=from_text)
    options = NOTHING
    if known is not None and 0 < units(known.value) < live:
        options += Options(
            drafts=(
                Draft(
                    tier=Tier.RESTORE,
                    actions=(
                        SetResources(
                            target=workload.ref,
                            container=name,
                            requests={resource: str(known.value)},
                        ),
                    ),
                    rationale=f"{subject.statement()}. {name} requested {known.value} of "
                    f"{resource} according to {known.source}; this lowers the request back "
                    f"from {live_text} so that a node can take its pods.",
                    grounding=known.grounding,
                ),
            )
        )
    return options + template_options(ctx, subject, workload)


# -------------------------------------------------------------------------- scheduling

_SCHEDULING = {
    Aspect.NODE_SELECTOR: ("nodeSelector", "node_selector"),
    Aspect.TOLERATIONS: ("tolerations", "tolerations"),
    Aspect.AFFINITY: ("affinity", "affinity"),
}


def scheduling_options(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    suspect, field = subject.suspect, subject.field
    assert suspect is not None and field is not None
    key, keyword = _SCHEDULING[field.aspect]
    empty: Any = [] if key == "tolerations" else {}
    live = pod_spec_of(workload.body).get(key) or empty

    def from_journal(body: JsonObject) -> Any:
        spec = pod_spec_of(body)
        return (spec.get(key) or empty) if spec else UNKNOWN

    def from_text(text: str) -> Any:
        value = literal(text)
        if not isinstance(value, type(empty)):
            return UNKNOWN
        if isinstance(value, list) and not all(isinstance(t, dict) for t in value):
            return UNKNOWN  # the diagnosis shows tolerations as "key=value:Effect" text
        return value

    def action(value: Any) -> SetScheduling:
        if keyword == "node_selector":
            return SetScheduling(target=workload.ref, node_selector=dict(value))
        if keyword == "tolerations":
            return SetScheduling(target=workload.ref, tolerations=tuple(dict(t) for t in value))
        return SetScheduling(target=workload.ref, affinity=dict(value))

    drafts: list[Draft] = []
    known = was(ctx, suspect, from_journal, from_text=from_text)
    if known is not None and known.value != live:
        shown = short(known.value) if known.value else f"no {key}"
        drafts.append(
            Draft(
                tier=Tier.RESTORE,
                actions=(action(known.value),),
                rationale=f"{subject.statement()}. Its pods had {shown} according to "
                f"{known.source}; this puts that back so the scheduler can place them.",
                grounding=known.grounding,
            )
        )
    derived = (
        _satisfiable(ctx, live) if key == "nodeSelector" else (empty if key == "affinity" else None)
    )
    if derived is not None and derived != live and (known is None or derived != known.value):
        shown = f"nodeSelector {short(derived)}" if derived else f"no {key}"
        drafts.append(
            Draft(
                tier=Tier.DERIVED,
                actions=(action(derived),),
                rationale=f"{subject.statement()}. No ready node satisfies it; this leaves "
                f"{shown}, which {'some node satisfies' if derived else 'any node satisfies'}.",
            )
        )
    revision = rollback_target(ctx, workload)
    if revision is not None:
        drafts.append(
            Draft(
                tier=Tier.DERIVED,
                actions=(rollback(ctx, workload, revision),),
                rationale=f"{subject.statement()}. Revision {revision.revision} is the pod "
                "template from before that change, scheduling constraints included.",
            )
        )
    return Options(drafts=tuple(drafts))


def _satisfiable(ctx: Context, selector: dict[str, str]) -> dict[str, str] | None:
    """The part of a node selector some ready, schedulable node satisfies (None: the whole
    selector is satisfiable already, or the nodes are unknown)."""
    nodes = [n for n in ctx.nodes() if n.ready and not n.unschedulable]
    if not nodes or not selector:
        return None
    if any(all(n.labels.get(k) == v for k, v in selector.items()) for n in nodes):
        return None
    kept = {k: v for k, v in selector.items() if any(n.labels.get(k) == v for n in nodes)}
    if kept and any(all(n.labels.get(k) == v for k, v in kept.items()) for n in nodes):
        return kept
    return {}
