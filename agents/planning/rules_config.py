"""A wrong setting in a ConfigMap: restore the key, then make its readers read it again.

Who must restart follows from *how* each workload reads the ConfigMap, found by reading the
workloads: an env var (`configMapKeyRef` of that key, or `envFrom` of the whole map) and a
`subPath` mount are read once, at container start, so those workloads get a
`RolloutRestart`. A whole-volume mount is refreshed in place by the kubelet: a flag file its
service watches (a feature-flag daemon) needs no restart at all — restarting it would only
add risk — so for a flag the restore stands alone, with restore-and-restart as the
alternative in case the reader does not reload.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agents.actions import Action, RolloutRestart, SetConfigMapKeys
from agents.diagnosis.suspect import Suspect
from agents.model import JsonObject, KubeObject
from agents.planning.addresses import correct
from agents.planning.context import Context
from agents.planning.drafts import NOTHING, Draft, Options, Tier
from agents.planning.grounding import Grounding
from agents.planning.paths import Aspect, literal, short
from agents.planning.plan import Escalation
from agents.planning.rollback import template_before
from agents.planning.subject import UNKNOWN, Subject, was
from agents.planning.template import ConfigMapWay, PodTemplate
from agents.redact import looks_secret

_FLAG_PATH = re.compile(r"\((?P<path>[\w.\-]+)\)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reader:
    workload: KubeObject
    how: ConfigMapWay

    @property
    def at_start(self) -> bool:
        return self.how.at_start


def readers(ctx: Context, config_map: str, key: str | None) -> list[Reader]:
    """The workloads that read `key` of `config_map` (any key when None), and how."""
    found: list[Reader] = []
    for workload in ctx.workloads():
        how = PodTemplate.of(workload.body).way_of(config_map, key=key)
        if how is not None:
            found.append(Reader(workload=workload, how=how))
    return found


def is_flag(subject: Subject, value: str | None) -> bool:
    """A feature flag: the diagnosis says so, or the value is a flag document."""
    suspect = subject.suspect
    if suspect is not None and re.search(r"\bflag", suspect.reason, re.I):
        return True
    try:
        doc = json.loads(value) if value else None
    except ValueError:
        return False
    return isinstance(doc, dict) and isinstance(doc.get("flags"), dict)


def _restarts(ctx: Context, subject: Subject, workloads: list[KubeObject]) -> list[Action]:
    first = subject.hypothesis.service
    ordered = sorted(workloads, key=lambda w: (w.name != first, w.name))
    stamp = ctx.now.isoformat()
    return [
        RolloutRestart(target=ctx.ref(w.kind, w.name), stamp=stamp)
        for w in dict((w.name, w) for w in ordered).values()
    ]


def _names(workloads: list[KubeObject]) -> str:
    return ", ".join(sorted({w.name for w in workloads}))


def config_options(ctx: Context, subject: Subject) -> Options:
    suspect, field = subject.suspect, subject.field
    if suspect is None or field is None:
        return NOTHING
    config_map = ctx.get("ConfigMap", suspect.name)
    if config_map is None:
        return _missing(ctx, subject)
    if field.aspect is not Aspect.CONFIG_KEY or field.key is None:
        return NOTHING
    at = _key_at(ctx, subject, config_map, field.key)
    return NOTHING + _recorded(ctx, subject, suspect, at) + _corrected(ctx, subject, at)


@dataclass(frozen=True, slots=True, kw_only=True)
class _KeyAt:
    """The suspect key of a ConfigMap, its live value, and who reads it when."""

    config_map: KubeObject
    key: str
    live: Any
    flag: bool
    at_start: list[KubeObject]
    live_readers: list[KubeObject]


def _key_at(ctx: Context, subject: Subject, config_map: KubeObject, key: str) -> _KeyAt:
    data = config_map.body.get("data") or {}
    live = data.get(key)
    flag = is_flag(subject, live)
    found = readers(ctx, config_map.name, key)
    # A flag file mounted whole is re-read live; anything else is read when a container starts.
    live_readers = [r.workload for r in found if flag and not r.at_start]
    at_start = [r.workload for r in found if r.workload not in live_readers]
    return _KeyAt(
        config_map=config_map,
        key=key,
        live=live,
        flag=flag,
        at_start=at_start,
        live_readers=live_readers,
    )


def _recorded(ctx: Context, subject: Subject, suspect: Suspect, at: _KeyAt) -> Options:
    """The key's recorded value put back, or — when it is back already — the readers that
    still hold the old one restarted."""
    key = at.key

    def from_journal(body: JsonObject) -> Any:
        known = body.get("data")
        if not isinstance(known, dict):
            return UNKNOWN
        value = known.get(key)
        return None if value is None else str(value)

    def from_text(text: str) -> Any:
        if at.flag:
            return _flag_restored(suspect.reason, at.live, text)
        return text

    # A secret is never restored from a record, whatever the record holds.
    known = None if looks_secret(key) else was(ctx, suspect, from_journal, from_text=from_text)
    if known is None:
        return NOTHING
    if known.value != at.live:
        return _drafts(
            ctx,
            subject,
            restore=SetConfigMapKeys(target=at.config_map.ref, values={key: known.value}),
            at_start=at.at_start,
            live_readers=at.live_readers,
            tier=Tier.RESTORE,
            why=f"{key} was {short(known.value)} according to {known.source}",
            grounding=known.grounding,
        )
    return _stale(ctx, subject, at.config_map, key, at.at_start)


def _corrected(ctx: Context, subject: Subject, at: _KeyAt) -> Options:
    """The live value as an address of a Service that exists, when it names none."""
    if not isinstance(at.live, str):
        return NOTHING
    fix = correct(at.live, ctx.services())
    if fix is None:
        return NOTHING
    return _drafts(
        ctx,
        subject,
        restore=SetConfigMapKeys(target=at.config_map.ref, values={at.key: fix.value}),
        at_start=at.at_start,
        live_readers=at.live_readers,
        tier=Tier.DERIVED,
        why=f"{fix.why}, so {at.key} should be {fix.value!r}",
    )


def _stale(
    ctx: Context, subject: Subject, config_map: KubeObject, key: str, at_start: list[KubeObject]
) -> Options:
    """The key is as it should be, but pods that started before its last change still hold
    the old value (a restore whose restarts did not all fit one transaction, or a fix made
    by hand): restart those readers."""
    changes = [c for c in ctx.changes_of("ConfigMap", config_map.name) if f"data.{key}" in c.diff]
    if not changes:
        return NOTHING
    changed_at = changes[-1].at
    stale = [
        w
        for w in at_start
        if any(p.created_at is not None and p.created_at < changed_at for p in ctx.pods_of(w))
    ]
    if not stale:
        return NOTHING
    return Options(
        drafts=(
            Draft(
                tier=Tier.DERIVED,
                actions=tuple(_restarts(ctx, subject, stale)),
                rationale=f"{subject.statement()}. {key} changed at "
                f"{changed_at.strftime('%H:%M:%SZ')}, after the pods of {_names(stale)} "
                "started; they read it only at start, so this restarts them.",
            ),
        )
    )


def _drafts(
    ctx: Context,
    subject: Subject,
    *,
    restore: SetConfigMapKeys,
    at_start: list[KubeObject],
    live_readers: list[KubeObject],
    tier: Tier,
    why: str,
    grounding: Grounding = Grounding.SNAPSHOT,
) -> Options:
    text = f"{subject.statement()}. {why}; this sets it back"
    if at_start:
        one = len({w.name for w in at_start}) == 1
        text += f" and restarts {_names(at_start)}, which " + (
            "reads it only when its containers start" if one else "read it only at start"
        )
    if live_readers:
        one = len({w.name for w in live_readers}) == 1
        text += f"; {_names(live_readers)} " + (
            "reads the mounted file live" if one else "read the mounted file live"
        )
        text += ", so it needs no restart" if one else ", so they need no restart"
    main = Draft(
        tier=tier,
        actions=(restore, *_restarts(ctx, subject, at_start)),
        rationale=text + ".",
        grounding=grounding,
    )
    drafts = [main]
    if live_readers:
        drafts.append(
            Draft(
                tier=Tier.GENERIC,
                actions=(restore, *_restarts(ctx, subject, at_start + live_readers)),
                rationale=f"{subject.statement()}. {why}; this sets it back and also restarts "
                f"{_names(live_readers)}, in case the file is not reloaded live.",
                grounding=grounding,
            )
        )
    return Options(drafts=tuple(drafts))


def _flag_restored(reason: str, live: str | None, old_leaf: str) -> Any:
    """The flag document with the one flag the diagnosis names set back to its old value
    (when the journal has no copy of the whole document)."""
    match = _FLAG_PATH.search(reason)
    if match is None or live is None:
        return UNKNOWN
    try:
        doc = json.loads(live)
    except ValueError:
        return UNKNOWN
    node = doc
    parts = match["path"].split(".")
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return UNKNOWN
    if not isinstance(node, dict) or parts[-1] not in node:
        return UNKNOWN
    value = literal(old_leaf)
    node[parts[-1]] = value
    return json.dumps(doc, indent=2) if "\n" in live else json.dumps(doc)


def _missing(ctx: Context, subject: Subject) -> Options:
    """A ConfigMap its readers need does not exist: creating it is outside the catalog (it
    has no snapshot to undo to), but a template change that renamed it can be rolled back."""
    suspect = subject.suspect
    assert suspect is not None
    workload = ctx.workload_for(subject.hypothesis.service)
    drafts = (
        []
        if workload is None
        else template_before(ctx, subject, workload, "the ConfigMap reference as it was")
    )
    readers_text = _names([r.workload for r in readers(ctx, suspect.name, None)]) or "its readers"
    return Options(
        drafts=tuple(drafts),
        escalation=Escalation(
            reason=f"ConfigMap {suspect.name} does not exist; creating an object is not an "
            "action Stratus can undo",
            runbook="\n".join(
                [
                    f"1. Find where ConfigMap {suspect.name} should come from (the app's "
                    "manifests, Helm chart or GitOps repository) and whether it was deleted or "
                    "renamed: `kubectl -n "
                    f"{ctx.namespace} get events --field-selector reason=Failed`.",
                    f"2. Re-create it from source control: `kubectl -n {ctx.namespace} apply "
                    "-f <manifest>` (never from memory: its values may be secrets).",
                    f"3. Restart {readers_text} so that they read it: `kubectl -n "
                    f"{ctx.namespace} rollout restart deployment/<name>`.",
                ]
            ),
        ),
    )
