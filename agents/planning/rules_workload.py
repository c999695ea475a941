"""Fixes for a workload's own spec: replicas, image, command and env (resources and
scheduling are in `rules_resources`).

Each follows the same order. Put it back: the field's last known good from the change journal
(or the diagnosis's record), or the rollout revision from before the change. Then a fix
derived from the cluster's state: the HPA's minimum, the image of the previous revision, an
address corrected to the Service it meant.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any

from agents.actions import MergePatch, ScaleWorkload, SetContainerEnv, SetImage
from agents.diagnosis.suspect import Suspect
from agents.model import JsonObject, KubeObject
from agents.planning.addresses import correct
from agents.planning.context import Context, containers
from agents.planning.drafts import NOTHING, Draft, Options, Tier
from agents.planning.paths import (
    Aspect,
    as_int,
    literal,
    short,
)
from agents.planning.rollback import (
    rollback_draft,
    rollback_target,
    template_before,
    template_options,
)
from agents.planning.rules_resources import limit_options, request_options, scheduling_options
from agents.planning.subject import UNKNOWN, Subject, container_name, container_of, was
from agents.redact import looks_secret

logger = logging.getLogger(__name__)


def workload_options(ctx: Context, subject: Subject) -> Options:
    suspect, field = subject.suspect, subject.field
    if suspect is None or field is None:
        return NOTHING
    workload = ctx.workload(suspect.name) or ctx.workload_for(subject.hypothesis.service)
    if workload is None:
        return NOTHING
    handler = {
        Aspect.REPLICAS: replicas_options,
        Aspect.IMAGE: image_options,
        Aspect.COMMAND: command_options,
        Aspect.ARGS: command_options,
        Aspect.ENV: env_options,
        Aspect.LIMIT_MEMORY: limit_options,
        Aspect.LIMIT_CPU: limit_options,
        Aspect.REQUEST_MEMORY: request_options,
        Aspect.REQUEST_CPU: request_options,
        Aspect.NODE_SELECTOR: scheduling_options,
        Aspect.TOLERATIONS: scheduling_options,
        Aspect.AFFINITY: scheduling_options,
    }.get(field.aspect, template_options)
    return handler(ctx, subject, workload)


def _replicas(workload: KubeObject) -> int:
    value = (workload.body.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


# ---------------------------------------------------------------------------- replicas


def replicas_options(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    suspect = subject.suspect
    assert suspect is not None
    live = _replicas(workload)

    def from_journal(body: JsonObject) -> Any:
        value = (body.get("spec") or {}).get("replicas")
        return int(value) if isinstance(value, int) else UNKNOWN

    def from_text(text: str) -> Any:
        value = as_int(text)
        return UNKNOWN if value is None else value

    known = was(ctx, suspect, from_journal, from_text=from_text)
    options = NOTHING
    if known is not None and known.value > live:
        options += Options(
            drafts=(
                Draft(
                    tier=Tier.RESTORE,
                    actions=(
                        ScaleWorkload(
                            target=workload.ref, replicas=known.value, from_replicas=live
                        ),
                    ),
                    rationale=f"{subject.statement()}. It ran {known.value} replica(s) "
                    f"according to {known.source}; scaling back restores its capacity.",
                    grounding=known.grounding,
                ),
            )
        )
    return options + scale_up(ctx, subject, workload)


def scale_up(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    """Derived: a workload with no replicas (or fewer than its HPA's minimum) gets that
    minimum, at least one."""
    live = _replicas(workload)
    hpa = ctx.hpa_for(workload)
    minimum = int((hpa.body.get("spec") or {}).get("minReplicas") or 1) if hpa else 1
    target = max(1, minimum)
    if live >= target:
        return NOTHING
    why = f"the minimum of {hpa.kind} {hpa.name}" if hpa else "one replica, the least that serves"
    return Options(
        drafts=(
            Draft(
                tier=Tier.DERIVED,
                actions=(ScaleWorkload(target=workload.ref, replicas=target, from_replicas=live),),
                rationale=f"{subject.statement()}. No earlier replica count is known; this "
                f"scales {workload.name} from {live} to {target} ({why}).",
            ),
        )
    )


# ------------------------------------------------------------------------------- image


def image_options(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    suspect = subject.suspect
    assert suspect is not None
    name = container_name(workload, subject.field, suspect)
    live_container = container_of(workload.body, name) or {}
    live_image = str(live_container.get("image", ""))

    def from_journal(body: JsonObject) -> Any:
        c = container_of(body, name)
        return str(c["image"]) if c is not None and c.get("image") else UNKNOWN

    def from_text(text: str) -> Any:
        return text if text and " " not in text.strip() else UNKNOWN

    known = was(ctx, suspect, from_journal, from_text=from_text)
    good = known.value if known is not None and known.value != live_image else None
    drafts: list[Draft] = []
    revision = rollback_target(ctx, workload, container=name, image=good)
    earlier_image = revision.images.get(name) if revision is not None else None
    if revision is not None and earlier_image != live_image:
        drafts.append(
            rollback_draft(
                ctx,
                workload,
                revision,
                f"{subject.statement()}. Revision {revision.revision} of "
                f"{workload.name} ran {earlier_image or 'an earlier image'}; rolling back to it "
                "puts the pod template back as it was before the rollout.",
            )
        )
    if good is not None and known is not None:
        drafts.append(
            Draft(
                tier=Tier.RESTORE,
                actions=(SetImage(target=workload.ref, container=name, image=good),),
                rationale=f"{subject.statement()}. Container {name} ran {good} according to "
                f"{known.source}; this sets that image back and changes nothing else.",
                grounding=known.grounding,
            )
        )
    elif earlier_image and earlier_image != live_image and revision is not None:
        drafts.append(
            Draft(
                tier=Tier.DERIVED,
                actions=(SetImage(target=workload.ref, container=name, image=earlier_image),),
                rationale=f"{subject.statement()}. Revision {revision.revision} ran "
                f"{earlier_image}; this sets only the image of container {name} back to it.",
            )
        )
    return Options(drafts=tuple(drafts))


# ----------------------------------------------------------------------- command & args


def command_options(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    suspect, field = subject.suspect, subject.field
    assert suspect is not None and field is not None
    attr = "args" if field.aspect is Aspect.ARGS else "command"
    name = container_name(workload, field, suspect)
    live = (container_of(workload.body, name) or {}).get(attr)
    drafts = template_before(ctx, subject, workload, f"the {attr} with it", changed_only=False)

    def from_journal(body: JsonObject) -> Any:
        c = container_of(body, name)
        if c is None:
            return UNKNOWN
        value = c.get(attr)
        return [str(v) for v in value] if isinstance(value, list) else None

    def from_text(text: str) -> Any:
        value = literal(text)
        return [str(v) for v in value] if isinstance(value, list) else UNKNOWN

    known = was(ctx, suspect, from_journal, from_text=from_text)
    if known is not None and known.value != live:
        patch = _container_patch(workload, name, attr, known.value)
        if patch is not None:
            shown = "no " + attr if known.value is None else short(known.value)
            drafts.append(
                Draft(
                    tier=Tier.RESTORE,
                    actions=(
                        MergePatch(
                            target=workload.ref,
                            patch=patch,
                            reason=f"restore the {attr} of container {name}",
                        ),
                    ),
                    rationale=f"{subject.statement()}. Container {name} had {shown} according "
                    f"to {known.source}; this merge patch restores exactly that.",
                    grounding=known.grounding,
                )
            )
    return Options(drafts=tuple(drafts))


def _container_patch(
    workload: KubeObject, name: str, attr: str, value: list[str] | None
) -> JsonObject | None:
    """A merge patch of the pod template's container list with one field restored. A merge
    patch replaces lists whole, so it carries every container — and therefore is refused when
    any of them holds a literal secret, which must never travel in a plan."""
    items = copy.deepcopy(containers(workload.body))
    for c in items:
        for env in c.get("env") or []:
            if isinstance(env, dict) and "value" in env and looks_secret(str(env.get("name"))):
                logger.info(
                    "no merge patch for %s: container %s has a literal secret in its env",
                    workload.ref,
                    c.get("name"),
                )
                return None
        if c.get("name") == name:
            if value is None:
                c.pop(attr, None)
            else:
                c[attr] = list(value)
    return {"spec": {"template": {"spec": {"containers": items}}}}


# --------------------------------------------------------------------------------- env


def env_options(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    suspect, field = subject.suspect, subject.field
    assert suspect is not None and field is not None
    var = _suspect_variable(workload, container_name(workload, field, suspect), field.key)
    drafts: list[Draft] = []
    if var is not None:
        drafts += _restored_env(ctx, subject, suspect, var)
    drafts += _rolled_back_env(ctx, subject, workload)
    if var is not None:
        drafts += _corrected_env(ctx, subject, var)
    return Options(drafts=tuple(drafts))


@dataclass(frozen=True, slots=True, kw_only=True)
class _EnvVar:
    """The suspect variable of one container, as it is now."""

    workload: KubeObject
    container: str
    variable: str
    live_item: dict[str, Any] | None  # its entry in the container's env, if any
    live_value: Any


def _suspect_variable(workload: KubeObject, name: str, key: str | None) -> _EnvVar | None:
    """The variable the field key names — by name, or by its index in the container's env
    list — as it is now; None when the key names none."""
    env = [
        e for e in (container_of(workload.body, name) or {}).get("env") or [] if isinstance(e, dict)
    ]
    variable = key
    if variable is not None and variable.isdigit():
        index = int(variable)
        variable = str(env[index].get("name")) if index < len(env) else None
    if variable is None:
        return None
    live_item = next((e for e in env if e.get("name") == variable), None)
    return _EnvVar(
        workload=workload,
        container=name,
        variable=variable,
        live_item=live_item,
        live_value=live_item.get("value") if live_item else None,
    )


def _restored_env(ctx: Context, subject: Subject, suspect: Suspect, var: _EnvVar) -> list[Draft]:
    """The variable's recorded value (or its absence) set back, when it differs from now."""
    name, variable = var.container, var.variable

    def from_journal(body: JsonObject) -> Any:
        c = container_of(body, name)
        if c is None:
            return UNKNOWN
        item = next((e for e in c.get("env") or [] if e.get("name") == variable), None)
        if item is None:
            return None
        return str(item["value"]) if "value" in item else UNKNOWN

    def from_text(text: str) -> Any:
        return text

    # A secret is never restored from a record, whatever the record holds.
    secret = looks_secret(variable)
    known = None if secret else was(ctx, suspect, from_journal, from_text=from_text)
    if known is None or (known.value == var.live_value and var.live_item is not None):
        return []
    shown = "unset" if known.value is None else short(known.value)
    return [
        Draft(
            tier=Tier.RESTORE,
            actions=(
                SetContainerEnv(
                    target=var.workload.ref, container=name, env={variable: known.value}
                ),
            ),
            rationale=f"{subject.statement()}. {variable} was {shown} according to "
            f"{known.source}; this sets it back (the rollout restarts the pods).",
            grounding=known.grounding,
        )
    ]


def _rolled_back_env(ctx: Context, subject: Subject, workload: KubeObject) -> list[Draft]:
    return template_before(ctx, subject, workload, "the env with it")


def _corrected_env(ctx: Context, subject: Subject, var: _EnvVar) -> list[Draft]:
    """The live value as an address of a Service that exists, when it names none."""
    if not isinstance(var.live_value, str):
        return []
    fix = correct(var.live_value, ctx.services())
    if fix is None:
        return []
    return [
        Draft(
            tier=Tier.DERIVED,
            actions=(
                SetContainerEnv(
                    target=var.workload.ref, container=var.container, env={var.variable: fix.value}
                ),
            ),
            rationale=f"{subject.statement()}. {fix.why}: this sets {var.variable} to "
            f"{fix.value!r}.",
        )
    ]
