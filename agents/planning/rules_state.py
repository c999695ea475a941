"""Fixes for hypotheses that name no suspect field: derived from what the cluster shows.

The offline reasoner's alternatives and some of its principles (pods killed without a spec
change, the deepest anomalous service) come without a suspect. For those the planner reads
the workload's state itself — pods failing or gone, a Service that reaches none of its pods,
containers OOMKilled, a rollout that left pods unable to start — and the change journal,
whose recent changes of the service's own objects become suspects of their own.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.actions import DeletePod, RolloutRestart
from agents.diagnosis.changes import is_controller
from agents.diagnosis.facts import STRATUS_MANAGER
from agents.diagnosis.state import CONFIG_REASONS, CRASH_REASONS, PULL_REASONS, START_REASONS
from agents.diagnosis.suspect import Suspect
from agents.model import KubeObject, PodState
from agents.planning.context import Context
from agents.planning.drafts import NOTHING, Draft, Options, Tier
from agents.planning.rollback import rollback_draft, rollback_target, template_changed
from agents.planning.rules_resources import limit_options
from agents.planning.rules_service import derived_ports, derived_selector, mismatched
from agents.planning.subject import Subject
from agents.planning.template import PodTemplate

_SPEC_REASONS = PULL_REASONS | START_REASONS | CONFIG_REASONS

#: Journal changes turned into suspects for one hypothesis, at most.
MAX_JOURNAL_SUSPECTS = 3


def failing(pod: PodState) -> bool:
    """Not ready, waiting, or killed and restarted — owned by a controller, and not for a
    reason a fresh pod would share (an image it cannot pull, a command it cannot start)."""
    if pod.owner is None:
        return False
    if any((c.reason or "") in _SPEC_REASONS for c in pod.containers):
        return False
    return not pod.ready or any(
        c.state != "running" or (c.restart_count > 0 and c.last_terminated_reason is not None)
        for c in pod.containers
    )


def pod_failure(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """Pods killed or failing without a spec change: delete the failing ones (their
    controller replaces them); a rolling restart of all of them is the alternative."""
    pods = sorted((p for p in ctx.pods_of(workload) if failing(p)), key=lambda p: p.name)
    drafts: list[Draft] = []
    if pods:
        names = ", ".join(p.name for p in pods)
        drafts.append(
            Draft(
                tier=Tier.DERIVED,
                actions=tuple(DeletePod(target=ctx.ref("Pod", p.name)) for p in pods),
                rationale=f"{subject.statement()}. Pods {names} are failing without a spec "
                f"change; deleting them lets their {workload.kind}'s controller start fresh ones.",
            )
        )
    drafts.append(restart(ctx, subject, workload))
    return Options(drafts=tuple(drafts))


def generic_step(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """The low-risk step for a hypothesis that has nothing to put back and nothing derived:
    replace the workload's unwell pods (delete the failing ones, else restart it). Only when
    some pod is unwell — restarting a healthy workload fixes nothing."""
    pods = ctx.pods_of(workload)
    if not any(failing(p) or not p.ready for p in pods):
        return NOTHING
    return pod_failure(ctx, subject, workload)


def restart(ctx: Context, subject: Subject, workload: KubeObject) -> Draft:
    return Draft(
        tier=Tier.GENERIC,
        actions=(RolloutRestart(target=workload.ref, stamp=ctx.now.isoformat()),),
        rationale=f"{subject.statement()}. A rolling restart replaces every pod of "
        f"{workload.name} one by one, keeping it serving.",
    )


def broken_rollout(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """Pods that cannot pull, start or keep running what a rollout gave them: the previous
    revision, when it ran another image or the template changed since."""
    live = {c.name: c.image for c in PodTemplate.of(workload.body).containers}
    stuck = [
        c
        for p in ctx.pods_of(workload)
        for c in p.containers
        if (c.reason or "") in PULL_REASONS | START_REASONS | CRASH_REASONS
        or c.last_terminated_reason in START_REASONS
    ]
    if not stuck:
        return NOTHING
    name = stuck[0].name
    revision = rollback_target(ctx, workload)
    if revision is None:
        return NOTHING
    earlier = revision.images.get(name)
    if earlier is not None and earlier != live.get(name):
        what = f"ran {earlier}"
    elif template_changed(ctx, workload):
        what = "is the pod template from before its last change"
    else:
        return NOTHING
    return Options(
        drafts=(
            rollback_draft(
                ctx,
                workload,
                revision,
                f"{subject.statement()}. Container {name} is "
                f"{stuck[0].reason or 'failing'} with {live.get(name, stuck[0].image)}; "
                f"revision {revision.revision} {what}, and rolling back to it restores that.",
            ),
        )
    )


def service_state(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """A Service of the workload that reaches none of its pods or ports."""
    options = NOTHING
    for service in ctx.services_for(workload) or ([s] if (s := ctx.service(workload.name)) else []):
        if mismatched(service, workload) is None:
            continue
        options += derived_selector(subject, service, workload)
        options += derived_ports(subject, service, workload)
    return options


def oom_state(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """Containers OOMKilled: the memory-limit fix, as if the diagnosis had named it."""
    names = [c.name for c in PodTemplate.of(workload.body).containers]
    for pod in ctx.pods_of(workload):
        for c in pod.containers:
            if "OOMKilled" in (c.reason, c.last_terminated_reason) and c.name in names:
                index = names.index(c.name)
                suspect = Suspect(
                    kind=workload.kind,
                    namespace=ctx.namespace,
                    name=workload.name,
                    field=f"spec.template.spec.containers[{index}].resources.limits.memory",
                    container=c.name,
                    reason="containers are OOMKilled",
                )
                return limit_options(
                    ctx,
                    Subject(hypothesis=subject.hypothesis, suspect=suspect),
                    workload,
                )
    return NOTHING


def journal_suspects(ctx: Context, subject: Subject, workload: KubeObject) -> list[Suspect]:
    """Recent changes of the service's own objects (its workload, the ConfigMaps it reads,
    its Services), newest first, as suspects: the "what changed just before" question."""
    objects = [(workload.kind, workload.name)]
    objects += [("Service", s.name) for s in ctx.services_for(workload)]
    objects += [("ConfigMap", cm) for cm in sorted(consumed_config_maps(workload))]
    found: list[Suspect] = []
    for kind, name in objects:
        for change in reversed(ctx.changes_of(kind, name)):
            if change.manager == STRATUS_MANAGER or is_controller(change.manager):
                continue
            if change.at > ctx.now:
                continue
            for path, (old, new) in change.diff.items():
                found.append(
                    Suspect(
                        kind=kind,
                        namespace=ctx.namespace,
                        name=name,
                        field=path,
                        current=None if new is None else str(new),
                        last_known_good=None if old is None else str(old),
                        reason=f"changed by {change.manager} shortly before",
                    )
                )
    return found[:MAX_JOURNAL_SUSPECTS]


def consumed_config_maps(workload: KubeObject) -> set[str]:
    """ConfigMaps a workload reads: env references, envFrom, volumes."""
    return PodTemplate.of(workload.body).config_maps()


StateRule = Callable[[Context, Subject, KubeObject], Options]
