"""Services whose selector or targetPort matches no serving pod or port.

Put it back first: the ports or selector as the change journal last saw them working. Else
derive them from the workload the Service fronts: the targetPort a container really listens
on (by port name, or the only port), the selector its pods really carry (the workload's own
`matchLabels`). Either way the fix is a `PatchService`, which the workload never notices.
"""

from __future__ import annotations

import copy
from typing import Any

from agents.actions import PatchService
from agents.model import JsonObject, KubeObject
from agents.planning.context import (
    Context,
    containers,
    match_labels,
    matches,
    service_selector,
    template_labels,
)
from agents.planning.drafts import NOTHING, Draft, Options, Tier
from agents.planning.paths import Aspect, as_int, literal, short
from agents.planning.subject import UNKNOWN, Subject, was


def _ports(service: KubeObject) -> list[JsonObject]:
    ports = (service.body.get("spec") or {}).get("ports") or []
    return [dict(p) for p in ports if isinstance(p, dict)]


def container_ports(workload: KubeObject) -> list[tuple[int, str | None]]:
    out = []
    for c in containers(workload.body):
        for p in c.get("ports") or []:
            if isinstance(p, dict) and p.get("containerPort"):
                out.append((int(p["containerPort"]), p.get("name")))
    return out


def _serves(target: Any, ports: list[tuple[int, str | None]]) -> bool:
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return int(target) in {n for n, _ in ports}
    return target in {name for _, name in ports if name}


def _shown(ports: list[JsonObject]) -> str:
    return ", ".join(f"{p.get('port')}→{p.get('targetPort', p.get('port'))}" for p in ports)


def service_options(ctx: Context, subject: Subject) -> Options:
    suspect, field = subject.suspect, subject.field
    if suspect is None or field is None:
        return NOTHING
    service = ctx.service(suspect.name)
    if service is None:
        return NOTHING
    workload = ctx.workload_for(subject.hypothesis.service) or ctx.workload_for(service.name)
    if field.aspect is Aspect.SERVICE_PORTS:
        return _restore_ports(ctx, subject, service) + derived_ports(subject, service, workload)
    return _restore_selector(ctx, subject, service) + derived_selector(subject, service, workload)


def _restore_ports(ctx: Context, subject: Subject, service: KubeObject) -> Options:
    suspect, field = subject.suspect, subject.field
    assert suspect is not None and field is not None
    live = _ports(service)
    index = as_int(field.key) or 0

    def from_journal(body: JsonObject) -> Any:
        ports = (body.get("spec") or {}).get("ports")
        return [dict(p) for p in ports] if isinstance(ports, list) and ports else UNKNOWN

    def from_text(text: str) -> Any:
        if not suspect.field.endswith("targetPort") or index >= len(live):
            return UNKNOWN
        value = literal(text)
        ports = copy.deepcopy(live)
        ports[index]["targetPort"] = int(value) if str(value).isdigit() else value
        return ports

    known = was(ctx, suspect, from_journal, from_text=from_text)
    if known is None or known.value == live:
        return NOTHING
    action = PatchService(target=service.ref, ports=tuple(known.value))
    return Options(
        drafts=(
            Draft(
                tier=Tier.RESTORE,
                actions=(action,),
                rationale=f"{subject.statement()}. Its ports were {_shown(known.value)} "
                f"according to {known.source}; this puts them back.",
                grounding=known.grounding,
            ),
        )
    )


def derived_ports(subject: Subject, service: KubeObject, workload: KubeObject | None) -> Options:
    """targetPorts that name no container port, pointed at the port the pods listen on."""
    if workload is None:
        return NOTHING
    serving = container_ports(workload)
    if not serving:
        return NOTHING
    live = _ports(service)
    fixed = copy.deepcopy(live)
    changed = []
    for port in fixed:
        target = port.get("targetPort", port.get("port"))
        if _serves(target, serving):
            continue
        by_name = [n for n, name in serving if name and name == port.get("name")]
        if by_name:
            new: int | None = by_name[0]
        elif len({n for n, _ in serving}) == 1:
            new = serving[0][0]
        elif _serves(port.get("port"), serving):
            new = int(port["port"])
        else:
            new = None
        if new is None:
            continue
        port["targetPort"] = new
        changed.append(f"{port.get('port')}→{target} to {port.get('port')}→{new}")
    if not changed:
        return NOTHING
    listening = ", ".join(str(n) for n, _ in serving)
    return Options(
        drafts=(
            Draft(
                tier=Tier.DERIVED,
                actions=(PatchService(target=service.ref, ports=tuple(fixed)),),
                rationale=f"{subject.statement()}. The pods of {workload.name} listen on "
                f"{listening}; this changes Service port {'; '.join(changed)}.",
            ),
        )
    )


def _restore_selector(ctx: Context, subject: Subject, service: KubeObject) -> Options:
    suspect, field = subject.suspect, subject.field
    assert suspect is not None and field is not None
    live = service_selector(service)

    def from_journal(body: JsonObject) -> Any:
        selector = (body.get("spec") or {}).get("selector")
        return dict(selector) if isinstance(selector, dict) and selector else UNKNOWN

    def from_text(text: str) -> Any:
        value = literal(text)
        if isinstance(value, dict) and value:
            return {str(k): str(v) for k, v in value.items()}
        if isinstance(value, str) and field.key and field.key in live:
            return {**live, field.key: value}  # the diagnosis recorded one label's value
        if isinstance(value, str) and len(live) == 1:
            return {next(iter(live)): value}
        return UNKNOWN

    known = was(ctx, suspect, from_journal, from_text=from_text)
    if known is None or known.value == live:
        return NOTHING
    return Options(
        drafts=(
            Draft(
                tier=Tier.RESTORE,
                actions=(PatchService(target=service.ref, selector=known.value),),
                rationale=f"{subject.statement()}. Its selector was {short(known.value)} "
                f"according to {known.source}; this puts it back.",
                grounding=known.grounding,
            ),
        )
    )


def derived_selector(subject: Subject, service: KubeObject, workload: KubeObject | None) -> Options:
    """A selector the workload's pods carry: its own matchLabels (what its ReplicaSets use)."""
    if workload is None:
        return NOTHING
    labels = template_labels(workload)
    selector = match_labels(workload)
    if not matches(selector, labels):
        live = service_selector(service)
        selector = {k: labels[k] for k in live if k in labels}
    if not selector or selector == service_selector(service):
        return NOTHING
    return Options(
        drafts=(
            Draft(
                tier=Tier.DERIVED,
                actions=(PatchService(target=service.ref, selector=selector),),
                rationale=f"{subject.statement()}. The pods of {workload.kind} {workload.name} "
                f"carry {short(selector)}; selecting them gives the Service its endpoints back.",
            ),
        )
    )


def mismatched(service: KubeObject, workload: KubeObject) -> str | None:
    """Why `service` does not reach `workload`'s pods, or None when it does."""
    selector = service_selector(service)
    if selector and not matches(selector, template_labels(workload)):
        return f"its selector {short(selector)} matches none of {workload.name}'s pods"
    serving = container_ports(workload)
    for port in _ports(service):
        target = port.get("targetPort", port.get("port"))
        if serving and not _serves(target, serving):
            return f"targetPort {target} is not a port {workload.name}'s containers listen on"
    return None
