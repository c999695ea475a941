"""Rolling a Deployment back: to which revision, and whether that would change anything.

A rollback is the broadest "put it back" there is — the whole pod template as it was — so the
planner pins the revision it means (the approver reads "revision 3", not "the previous one")
and only proposes it when the rollout history shows a revision to go back to.
"""

from __future__ import annotations

from agents.actions import RollbackWorkload
from agents.diagnosis.facts import STRATUS_MANAGER
from agents.kubeparse import pod_spec_digest
from agents.model import KubeObject, RevisionInfo
from agents.planning.context import Context
from agents.planning.drafts import Draft, Options, Tier
from agents.planning.subject import Subject

REVISION = "deployment.kubernetes.io/revision"


def current_revision(workload: KubeObject, history: list[RevisionInfo]) -> int | None:
    annotations = workload.metadata.get("annotations") or {}
    text = str(annotations.get(REVISION, ""))
    if text.isdigit():
        return int(text)
    return max((r.revision for r in history), default=None)


def rollback_target(
    ctx: Context, workload: KubeObject, *, container: str | None = None, image: str | None = None
) -> RevisionInfo | None:
    """The revision to roll back to: the newest earlier one that ran `image` in `container`
    when that is known, else the newest earlier one (whose image differs, when a container is
    named and its image is what is suspected).

    An earlier revision whose pod spec is the current one's is passed over: a restart (a
    person's, or a wrong attempt's that was rolled back) leaves one behind that differs only
    by an annotation, and "going back" to it would put the same fault back."""
    history = ctx.revisions(workload)
    if not history:
        return None
    earlier = _earlier_and_different(workload, history)
    if container is not None and image is not None:
        exact = [r for r in earlier if r.images.get(container) == image]
        if exact:
            return exact[0]
    return earlier[0] if earlier else None


def _earlier_and_different(workload: KubeObject, history: list[RevisionInfo]) -> list[RevisionInfo]:
    """The revisions before the current one whose pod spec is not the current one's, newest
    first."""
    current = current_revision(workload, history)
    template = (workload.body.get("spec") or {}).get("template") or {}
    now = pod_spec_digest(template.get("spec") or {}) if isinstance(template, dict) else ""
    earlier = [
        r
        for r in history
        if (current is None or r.revision < current) and not (r.pod_spec and r.pod_spec == now)
    ]
    return sorted(earlier, key=lambda r: r.revision, reverse=True)


def rollback_draft(
    ctx: Context,
    workload: KubeObject,
    revision: RevisionInfo,
    rationale: str,
    *,
    tier: Tier = Tier.RESTORE,
) -> Draft:
    """Roll `workload` back to `revision` (pinned: the approver reads which one)."""
    action = RollbackWorkload(
        target=ctx.ref(workload.kind, workload.name), revision=revision.revision
    )
    return Draft(tier=tier, actions=(action,), rationale=rationale)


def template_changed(ctx: Context, workload: KubeObject) -> bool:
    """Did someone other than Stratus change the pod template within the lookback?"""
    return any(
        c.manager != STRATUS_MANAGER and any(p.startswith("spec.template") for p in c.diff)
        for c in ctx.changes_of(workload.kind, workload.name)
    )


def template_before(
    ctx: Context,
    subject: Subject,
    workload: KubeObject,
    restores: str,
    *,
    changed_only: bool = True,
    tier: Tier = Tier.RESTORE,
) -> list[Draft]:
    """Roll back to the pod template from before its last change (`changed_only`: only when
    someone other than Stratus changed it within the lookback), saying what that `restores`."""
    revision = rollback_target(ctx, workload)
    if revision is None or (changed_only and not template_changed(ctx, workload)):
        return []
    rationale = (
        f"{subject.statement()}. Revision {revision.revision} is {workload.name}'s pod "
        f"template from before its last change; rolling back to it restores {restores}."
    )
    return [rollback_draft(ctx, workload, revision, rationale, tier=tier)]


def template_options(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """Any other field of the pod template: the revision from before the change."""
    return Options(drafts=tuple(template_before(ctx, subject, workload, "the template as it was")))
