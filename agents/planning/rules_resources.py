"""What a workload's pods may use and where they may run: resource limits and requests,
node selectors, tolerations and affinity.

OOMKilled (memory) and throttled (CPU) containers get their limit raised: back to the last
known good, else above what they are seen using (2× the limit, or 1.5× the observed usage,
rounded to a quantity a person would write and capped at the largest node). Pods no node
accepts get their constraint put back, or the part of it no node satisfies removed, with the
previous revision as the alternative.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.actions import SetResources, SetScheduling
from agents.diagnosis.suspect import Suspect
from agents.kubeparse import quantity_bytes, quantity_millis
from agents.model import JsonObject, KubeObject, NodeInfo
from agents.planning.context import Context, pod_spec_of
from agents.planning.drafts import NOTHING, Draft, Options, Tier, Was
from agents.planning.paths import (
    Aspect,
    cpu_quantity,
    literal,
    memory_quantity,
    round_cpu_up,
    round_memory_up,
    short,
)
from agents.planning.rollback import template_before, template_options
from agents.planning.subject import UNKNOWN, Subject, container_name, container_of, was


def _max_allocatable(ctx: Context, resource: str) -> int | None:
    nodes = [n for n in ctx.nodes() if n.ready]
    values = [
        n.allocatable_memory_bytes if resource == "memory" else n.allocatable_cpu_millis
        for n in nodes
    ]
    best = max(values, default=0)
    return best or None


#: A resource's quantities in numbers: memory in bytes, CPU in millicores.
_UNITS: dict[str, Callable[[Any], int]] = {"memory": quantity_bytes, "cpu": quantity_millis}


def _resource_of(
    subject: Subject, workload: KubeObject, memory: Aspect
) -> tuple[Suspect, str, str, JsonObject]:
    """The suspect, its container, its resource ("memory" when the field's aspect is
    `memory`, else "cpu") and that container's `resources` as they are now."""
    suspect, field = subject.suspect, subject.field
    assert suspect is not None and field is not None
    name = container_name(workload, field, suspect)
    resources = (container_of(workload.body, name) or {}).get("resources") or {}
    return suspect, name, "memory" if field.aspect is memory else "cpu", resources


def limit_options(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """OOMKilled (memory) or throttled (CPU): raise the limit, back to where it was or above
    what the container uses."""
    suspect, name, resource, resources = _resource_of(subject, workload, Aspect.LIMIT_MEMORY)
    units = _UNITS[resource]
    live_text = (resources.get("limits") or {}).get(resource)
    request_text = (resources.get("requests") or {}).get(resource)
    limit = _Limit(
        workload=workload,
        container=name,
        resource=resource,
        live_text=live_text,
        live=units(live_text) if live_text is not None else 0,
        request=units(request_text) if request_text is not None else 0,
        cap=_max_allocatable(ctx, resource),
    )
    known = was(ctx, suspect, _limit_from_journal(limit), from_text=_limit_from_text(limit))
    drafts = [*_restored_limit(subject, limit, known), *_derived_limit(ctx, subject, limit, known)]
    return Options(drafts=tuple(drafts))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Limit:
    """One container's limit of one resource, as it is now."""

    workload: KubeObject
    container: str
    resource: str  # "memory" | "cpu"
    live_text: Any
    live: int
    request: int
    cap: int | None  # the largest ready node's allocatable, when known

    def units(self, text: Any) -> int:
        return _UNITS[self.resource](text)


def _limit_from_journal(limit: _Limit) -> Callable[[JsonObject], Any]:
    def from_journal(body: JsonObject) -> Any:
        c = container_of(body, limit.container)
        value = ((c or {}).get("resources") or {}).get("limits", {}).get(limit.resource)
        return str(value) if value is not None else UNKNOWN

    return from_journal


def _limit_from_text(limit: _Limit) -> Callable[[str], Any]:
    def from_text(text: str) -> Any:
        if limit.resource == "memory" and text.strip().isdigit():
            return memory_quantity(int(text))  # the diagnosis records bytes
        return text if limit.units(text) > 0 else UNKNOWN

    return from_text


def _restored_limit(subject: Subject, limit: _Limit, known: Was | None) -> list[Draft]:
    """The recorded limit put back, when it is higher than now and fits on a node."""
    if known is None or limit.units(known.value) <= limit.live:
        return []
    if limit.cap is not None and limit.units(known.value) > limit.cap:
        return []
    resource, name = limit.resource, limit.container
    return [
        Draft(
            tier=Tier.RESTORE,
            actions=(
                SetResources(
                    target=limit.workload.ref, container=name, limits={resource: str(known.value)}
                ),
            ),
            rationale=f"{subject.statement()}. The {resource} limit of {name} was "
            f"{known.value} according to {known.source}; this raises it back from "
            f"{limit.live_text}.",
            grounding=known.grounding,
        )
    ]


def _derived_limit(ctx: Context, subject: Subject, limit: _Limit, known: Was | None) -> list[Draft]:
    """A limit above what the container uses, unless it is the recorded one again."""
    derived = _raised_limit(
        ctx,
        limit.workload,
        container=limit.container,
        resource=limit.resource,
        live=limit.live,
        request=limit.request,
        cap=limit.cap,
    )
    if derived is None or not limit.live:
        return []
    new, why = derived
    if known is not None and limit.units(known.value) == limit.units(new):
        return []
    resource, name = limit.resource, limit.container
    return [
        Draft(
            tier=Tier.DERIVED,
            actions=(
                SetResources(target=limit.workload.ref, container=name, limits={resource: new}),
            ),
            rationale=f"{subject.statement()}. This raises limits.{resource} of {name} "
            f"from {limit.live_text} to {new} ({why}).",
        )
    ]


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
    suspect, name, resource, resources = _resource_of(subject, workload, Aspect.REQUEST_MEMORY)
    units = _UNITS[resource]
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
    constraint = _Constraint(
        workload=workload,
        key=key,
        keyword=keyword,
        empty=empty,
        live=pod_spec_of(workload.body).get(key) or empty,
    )
    known = was(ctx, suspect, constraint.from_journal, from_text=constraint.from_text)
    drafts = [
        *_restored_constraint(subject, constraint, known),
        *_relaxed_constraint(ctx, subject, constraint, known),
        *_previous_template(ctx, subject, workload),
    ]
    return Options(drafts=tuple(drafts))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Constraint:
    """One scheduling constraint of a workload's pod template, as it is now."""

    workload: KubeObject
    key: str  # the pod spec's field: nodeSelector, tolerations, affinity
    keyword: str  # the matching argument of SetScheduling
    empty: Any  # the field unset: [] for tolerations, else {}
    live: Any

    def from_journal(self, body: JsonObject) -> Any:
        spec = pod_spec_of(body)
        return (spec.get(self.key) or self.empty) if spec else UNKNOWN

    def from_text(self, text: str) -> Any:
        value = literal(text)
        if not isinstance(value, type(self.empty)):
            return UNKNOWN
        if isinstance(value, list) and not all(isinstance(t, dict) for t in value):
            return UNKNOWN  # the diagnosis shows tolerations as "key=value:Effect" text
        return value

    def action(self, value: Any) -> SetScheduling:
        if self.keyword == "node_selector":
            return SetScheduling(target=self.workload.ref, node_selector=dict(value))
        if self.keyword == "tolerations":
            return SetScheduling(
                target=self.workload.ref, tolerations=tuple(dict(t) for t in value)
            )
        return SetScheduling(target=self.workload.ref, affinity=dict(value))


def _restored_constraint(
    subject: Subject, constraint: _Constraint, known: Was | None
) -> list[Draft]:
    """The recorded constraint put back, when it differs from the live one."""
    if known is None or known.value == constraint.live:
        return []
    shown = short(known.value) if known.value else f"no {constraint.key}"
    return [
        Draft(
            tier=Tier.RESTORE,
            actions=(constraint.action(known.value),),
            rationale=f"{subject.statement()}. Its pods had {shown} according to "
            f"{known.source}; this puts that back so the scheduler can place them.",
            grounding=known.grounding,
        )
    ]


def _relaxed_constraint(
    ctx: Context, subject: Subject, constraint: _Constraint, known: Was | None
) -> list[Draft]:
    """The constraint cut to what some ready node satisfies: the satisfiable part of a node
    selector, or no affinity at all (tolerations get no derived fix)."""
    key, live = constraint.key, constraint.live
    derived = (
        _satisfiable(ctx, live)
        if key == "nodeSelector"
        else (constraint.empty if key == "affinity" else None)
    )
    if derived is None or derived == live or (known is not None and derived == known.value):
        return []
    shown = f"nodeSelector {short(derived)}" if derived else f"no {key}"
    return [
        Draft(
            tier=Tier.DERIVED,
            actions=(constraint.action(derived),),
            rationale=f"{subject.statement()}. No ready node satisfies it; this leaves "
            f"{shown}, which {'some node satisfies' if derived else 'any node satisfies'}.",
        )
    ]


def _previous_template(ctx: Context, subject: Subject, workload: KubeObject) -> list[Draft]:
    return template_before(
        ctx,
        subject,
        workload,
        "the scheduling constraints with it",
        changed_only=False,
        tier=Tier.DERIVED,
    )


def _satisfiable(ctx: Context, selector: dict[str, str]) -> dict[str, str] | None:
    """The part of a node selector some ready, schedulable node satisfies (None: the whole
    selector is satisfiable already, or the nodes are unknown)."""
    nodes = [n for n in ctx.nodes() if n.ready and not n.unschedulable]
    if not nodes or not selector:
        return None
    if _satisfied(nodes, selector):
        return None
    kept = {k: v for k, v in selector.items() if any(n.labels.get(k) == v for n in nodes)}
    if kept and _satisfied(nodes, kept):
        return kept
    return {}


def _satisfied(nodes: list[NodeInfo], selector: dict[str, str]) -> bool:
    """Some node has every label of `selector`."""
    return any(all(n.labels.get(k) == v for k, v in selector.items()) for n in nodes)
