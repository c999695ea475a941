"""Grounded values and no symptom, no write (DESIGN section 3, rules 9 and 10).

Every value a planned action writes must come from a recorded earlier state of the same
object (the change journal, rollout history, a snapshot, the live object) or from a bound in
the policy (replica ceilings, an image registry allowlist). The planner applies two checks to
every action of every draft, here, in one place:

- `refusal(...)` — a value outside the policy's bounds, or a target outside the incident's
  namespace: the action is never proposed; the attempt is counted and logged as refused.
- `symptom_gate(...)` — the action changes an object of a service that shows no symptom, is
  not on the failing dependency path and is not a config/quota object such a service uses:
  the action is dropped, with the reason.

A value only a reasoner proposed (the journal has no record of it) is not dropped: the plan
carries it as a *suggestion* marked `NOT_SEEN`, and no autonomy level runs it (see
`CandidatePlan.held`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from enum import StrEnum

from agents.actions import (
    Action,
    DeletePod,
    MergePatch,
    PatchService,
    RollbackWorkload,
    RolloutRestart,
    ScaleWorkload,
    SetConfigMapKeys,
    SetContainerEnv,
    SetHpaBounds,
    SetImage,
    SetResources,
    SetScheduling,
)
from agents.diagnosis.assessment import Assessment
from agents.model import KubeObject
from agents.planning.context import WORKLOAD_KINDS, Context, matches, template_labels
from agents.planning.template import PodTemplate
from agents.policy import Bounds

logger = logging.getLogger(__name__)

#: The mark a value carries when no recorded state of the cluster ever had it.
NOT_SEEN = "not seen before in this cluster"


class Grounding(StrEnum):
    """Where a value an action writes comes from."""

    JOURNAL = "journal"  # a recorded earlier state in the change journal
    REVISION = "revision"  # the rollout history (a ReplicaSet revision)
    SNAPSHOT = "snapshot"  # the live object or an undo snapshot
    POLICY = "policy"  # within a bound the policy sets (replica ceiling, registry allowlist)
    REASONER = "reasoner"  # only a reasoner proposed it: a suggestion a person must confirm

    @property
    def grounded(self) -> bool:
        return self is not Grounding.REASONER


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """A proposed action the planner refused outright, and why (for the audit and counts)."""

    action: str  # its one-line description
    reason: str

    def line(self) -> str:
        return f"{self.action}: refused, {self.reason}"


# ----------------------------------------------------------------------------- bounds


def registry_of(image: str) -> str:
    """`evil.example.com/backdoor:1` → `evil.example.com`; `nginx:1.25` → `docker.io`."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def seen_images(ctx: Context) -> set[str]:
    """Every image this namespace is recorded to have run: live workloads, rollout
    history, and the journal's image changes."""
    out: set[str] = set()
    for workload in ctx.workloads():
        out |= {image for image in PodTemplate.of(workload.body).images if image}
        for rev in ctx.revisions(workload) or ():
            out |= set(rev.images.values())
        out |= {
            v
            for v in ctx.recorded_values(workload.kind, workload.name, "spec.template.spec")
            if ":" in v or "/" in v
        }
    return out


def replica_ceiling(bounds: Bounds, current: int | None) -> int:
    """The most replicas a value not recorded for the workload may ask for: the policy's
    absolute ceiling, and no more than `scale_factor` × what runs now."""
    grown = math.ceil(bounds.scale_factor * max(current or 0, 1))
    return min(bounds.max_replicas, max(grown, 1))


def refusal(ctx: Context, action: Action, bounds: Bounds) -> str | None:
    """Why `action` may not even be proposed, or None: another namespace, more replicas than
    the policy allows, an image from a registry neither allowlisted nor seen here."""
    target = action.target
    if target.namespace is not None and target.namespace != ctx.namespace:
        return (
            f"it targets namespace {target.namespace}, not the incident's namespace {ctx.namespace}"
        )
    if isinstance(action, ScaleWorkload):
        if action.replicas > bounds.max_replicas:
            return (
                f"{action.replicas} replicas is above the policy's ceiling of "
                f"{bounds.max_replicas} (max_replicas)"
            )
        recorded = ctx.recorded_values(target.kind, target.name, "spec.replicas")
        ceiling = replica_ceiling(bounds, action.from_replicas)
        if (
            str(action.replicas) not in recorded
            and action.replicas > ceiling
            and not _within_hpa(ctx, target.name, action.replicas)
        ):
            return (
                f"{action.replicas} replicas was never recorded for {target.kind}/"
                f"{target.name} and is above {ceiling} ({bounds.scale_factor:g}× the "
                f"{action.from_replicas} running now)"
            )
    if isinstance(action, SetHpaBounds) and (action.max_replicas or 0) > bounds.max_replicas:
        return (
            f"an HPA maximum of {action.max_replicas} is above the policy's ceiling of "
            f"{bounds.max_replicas} (max_replicas)"
        )
    if isinstance(action, SetImage):
        registry = registry_of(action.image)
        if registry not in bounds.image_registries and action.image not in seen_images(ctx):
            allowed = ", ".join(bounds.image_registries) or "none: only images already seen"
            return (
                f"image {action.image} was never run in {ctx.namespace} and its registry "
                f"{registry} is not allowlisted (image_registries: {allowed})"
            )
    return None


def _within_hpa(ctx: Context, name: str, replicas: int) -> bool:
    """The workload's own HPA bounds the count: a range the cluster already records."""
    workload = ctx.workload(name)
    hpa = ctx.hpa_for(workload) if workload is not None else None
    if hpa is None:
        return False
    spec = hpa.body.get("spec") or {}
    low = int(spec.get("minReplicas") or 1)
    high = int(spec.get("maxReplicas") or 0)
    return low <= replicas <= high


# ---------------------------------------------------------------------- the symptom gate


def symptom_gate(
    ctx: Context,
    action: Action,
    assessment: Assessment | None,
    *,
    linked: frozenset[tuple[str, str]] = frozenset(),
) -> str | None:
    """Why `action` may not change its object — no symptom, no write — or None when it may.

    An object may change only if its service is unwell or on the failing dependency path
    (`assessment.unhealthy`), or it is a config/quota/policy object such a service uses —
    read by its pods, or `linked` to it: the suspect (kind, name) of a hypothesis about an
    unwell service (a feature-flag ConfigMap another service serves). A
    diagnosis without an assessment (hand-built) is not gated here: nothing says which
    services are unwell, and guessing would be worse than saying so in the log."""
    if assessment is None:
        return None
    unwell = set(assessment.unhealthy)
    if not unwell:
        return f"no service in {ctx.namespace} shows a symptom: nothing justifies a write"
    return _gate(_Gated(ctx=ctx, action=action, unwell=unwell, linked=linked))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Gated:
    """What every step of the symptom gate reads: the action and who is unwell."""

    ctx: Context
    action: Action
    unwell: set[str]
    linked: frozenset[tuple[str, str]]


def _gate(g: _Gated) -> str | None:
    """The gate for the kind of object `g.action` changes. The order matters: an action
    matches the first step whose kind or action type it has."""
    action, target = g.action, g.action.target
    if target.kind in WORKLOAD_KINDS or isinstance(
        action, ScaleWorkload | SetImage | RollbackWorkload | RolloutRestart
    ):
        return _gate_workload(g)
    if isinstance(action, SetContainerEnv | SetResources | SetScheduling):
        return _gate_named(g)
    if isinstance(action, DeletePod):
        return _gate_pod(g)
    if isinstance(action, PatchService) or target.kind == "Service":
        return _gate_service(g)
    if isinstance(action, SetConfigMapKeys) or target.kind == "ConfigMap":
        return _gate_config_map(g)
    if isinstance(action, SetHpaBounds):
        return _gate_hpa(g)
    if isinstance(action, MergePatch) and target.kind in WORKLOAD_KINDS:
        return _gate_named(g)
    # Nodes, quotas and other cluster or policy objects: changed only for unwell services,
    # which the assessment has (checked above); the rule that drafts them names the pods.
    return None


def _gate_workload(g: _Gated) -> str | None:
    target = g.action.target
    workload = g.ctx.workload(target.name)
    if _workload_unwell(g.ctx, target.name, workload, g.unwell):
        return None
    if (
        isinstance(g.action, RolloutRestart)
        and workload is not None
        and any(_reads_config_map(workload, n) for k, n in g.linked if k == "ConfigMap")
    ):
        return None  # a reader restarted so a linked config change takes effect
    return _no_symptom(target.kind, target.name)


def _gate_named(g: _Gated) -> str | None:
    """The action names its workload: that workload's own service must be unwell."""
    target = g.action.target
    return None if target.name in g.unwell else _no_symptom(target.kind, target.name)


def _gate_pod(g: _Gated) -> str | None:
    target = g.action.target
    for name in g.unwell:
        workload = g.ctx.workload_for(name)
        if workload is not None and any(p.name == target.name for p in g.ctx.pods_of(workload)):
            return None
    return _no_symptom("Pod", target.name)


def _gate_service(g: _Gated) -> str | None:
    target = g.action.target
    service = g.ctx.service(target.name)
    if target.name in g.unwell:
        return None
    selector = (service.body.get("spec") or {}).get("selector") if service else None
    for name in g.unwell:
        workload = g.ctx.workload_for(name)
        if workload is not None and matches(dict(selector or {}), template_labels(workload)):
            return None
    return _no_symptom("Service", target.name)


def _gate_config_map(g: _Gated) -> str | None:
    target = g.action.target
    if (target.kind, target.name) in g.linked:
        return None
    ctx, unwell = g.ctx, g.unwell
    users = {w.name for w in ctx.workloads() if _reads_config_map(w, target.name)}
    if users & unwell or any(_workload_unwell(ctx, u, ctx.workload(u), unwell) for u in users):
        return None
    return (
        f"ConfigMap/{target.name} is read by no unwell service "
        f"({', '.join(sorted(users)) or 'no workload reads it'})"
    )


def _gate_hpa(g: _Gated) -> str | None:
    target = g.action.target
    hpa = g.ctx.get("HorizontalPodAutoscaler", target.name)
    ref = ((hpa.body.get("spec") or {}).get("scaleTargetRef") or {}) if hpa else {}
    name = str(ref.get("name") or "")
    if name and _workload_unwell(g.ctx, name, g.ctx.workload(name), g.unwell):
        return None
    return _no_symptom("HorizontalPodAutoscaler", target.name)


def _no_symptom(kind: str, name: str) -> str:
    return (
        f"{kind}/{name} belongs to no service that shows a symptom or sits on the failing "
        "dependency path (no symptom, no write)"
    )


def _workload_unwell(
    ctx: Context, name: str, workload: KubeObject | None, unwell: set[str]
) -> bool:
    if name in unwell:
        return True
    if workload is None:
        return False
    return any(s.name in unwell for s in ctx.services_for(workload))


def _reads_config_map(workload: KubeObject, name: str) -> bool:
    """Any container (init ones too) reads the ConfigMap, or the pods have a volume of it."""
    return bool(PodTemplate.of(workload.body).uses_of(name))
