"""A candidate root cause as a rule proposes it, before localisation ranks them all."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agents.diagnosis.facts import Facts, Touch
from agents.diagnosis.observe import ContainerSpec
from agents.diagnosis.suspect import Suspect
from agents.model import Category, FaultLevel, FaultType

VIRT_OPERATION = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.OPERATION_ERROR)
VIRT_MISCONFIG = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.MISCONFIGURATION)
VIRT_NETWORK = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.NETWORK)
APP_MISCONFIG = Category(level=FaultLevel.APPLICATION, type=FaultType.MISCONFIGURATION)
APP_CODE = Category(level=FaultLevel.APPLICATION, type=FaultType.CODE_DEFECT)
APP_AUTH = Category(level=FaultLevel.APPLICATION, type=FaultType.AUTHENTICATION)
APP_DEPENDENCY = Category(level=FaultLevel.APPLICATION, type=FaultType.DEPENDENCY)
NO_FAULT = Category(level=FaultLevel.APPLICATION, type=FaultType.NONE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    service: str
    category: Category
    confidence: float
    explanation: str
    rule: str
    keys: tuple[str, ...] = ()
    suspect: Suspect | None = None
    intrinsic: bool = True  # rests on the service's own state, not only on callers' words

    def boosted(self, delta: float, cap: float = 0.97) -> Candidate:
        return replace(self, confidence=max(0.01, min(cap, self.confidence + delta)))


def container_of(
    facts: Facts, service: str, reasons: frozenset[str] | None = None
) -> ContainerSpec | None:
    """The container of a workload that shows one of `reasons` (the first one otherwise)."""
    spec = facts.obs.specs.get(service)
    if spec is None or not spec.containers:
        return None
    if reasons:
        for pod in facts.obs.pods.get(service, ()):
            for c in pod.containers:
                if (c.reason in reasons or c.last_terminated_reason in reasons) and (
                    match := next((x for x in spec.containers if x.name == c.name), None)
                ):
                    return match
    return spec.containers[0]


def touch_suspect(facts: Facts, touch: Touch, reason: str) -> Suspect:
    """The object and field a recorded change touched, with its value before the change as
    the last known good."""
    return Suspect(
        kind=touch.kind,
        namespace=facts.ns,
        name=touch.name,
        field=touch.path,
        current=touch.new,
        last_known_good=touch.old,
        reason=reason,
    )


def workload_suspect(
    facts: Facts,
    service: str,
    field: str,
    current: object,
    *,
    touch_pattern: str | None = None,
    container: ContainerSpec | None = None,
    reason: str = "",
) -> tuple[Suspect, list[Touch]]:
    """A suspect field of a workload, with its last known good from the change record."""
    spec = facts.obs.specs.get(service)
    kind = spec.kind if spec else "Deployment"
    touches = facts.touched(kind, service, touch_pattern) if touch_pattern else []
    lkg = next((t.old for t in touches if t.old is not None), None)
    return (
        Suspect(
            kind=kind,
            namespace=facts.ns,
            name=service,
            field=field,
            current=None if current is None else str(current),
            last_known_good=lkg,
            container=container.name if container else None,
            reason=reason,
        ),
        touches,
    )


#: The workload field that lists its containers (a Deployment's and a StatefulSet's alike).
CONTAINERS = "spec.template.spec.containers"


def container_suspect(
    facts: Facts,
    service: str,
    container: ContainerSpec | None,
    field: str,
    current: object,
    *,
    touch_pattern: str,
    reason: str,
) -> tuple[Suspect, list[Touch]]:
    """A suspect `field` of one of the workload's containers (the first when none is named),
    with the recorded changes matching `touch_pattern`."""
    return workload_suspect(
        facts,
        service,
        f"{CONTAINERS}[{container.index if container else 0}].{field}",
        current,
        touch_pattern=touch_pattern,
        container=container,
        reason=reason,
    )


def touch_keys(touches: list[Touch]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t.key for t in touches))
