"""The change journal's part of diagnosis: what changed before it broke, and how each
changed object differs from its last known good.

Changes are ranked by how close they came before the incident's start — a Deployment edited
two minutes before the first alert is the usual suspect — and diffed field by field against
the journal's last known good, so the reasoner (and the planner) see `spec.ports[0].targetPort:
8083 → 9999` rather than "Service/geo changed".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from agents.diagnosis.handlers import Handler
from agents.diagnosis.items import Item, clip, make_item
from agents.diagnosis.observe import (
    ContainerSpec,
    EnvVar,
    FieldDiff,
    Observations,
    parse_service_spec,
    parse_workload_spec,
)
from agents.diagnosis.ports import JournalView, Redactor
from agents.model import Change, EvidenceKind, JsonObject
from agents.redact import redact_entries as redact_mapping

if TYPE_CHECKING:
    from agents.diagnosis.collect import Collector

#: Managers that change replicas on their own; a replica change by anyone else is an operation.
CONTROLLER_MANAGERS = (
    "kube-controller-manager",
    "horizontal-pod-autoscaler",
    "hpa",
    "vpa",
    "keda",
    "cluster-autoscaler",
)

_VALUE_CAP = 300


def is_controller(manager: str) -> bool:
    m = manager.lower()
    return any(m == c or m.startswith(c) for c in CONTROLLER_MANAGERS)


def proximity(change: Change, started: datetime) -> float:
    """1.0 for a change in the 15 minutes before the start, decaying over the lookback; a
    change after the start (during the incident) still matters, a little less."""
    minutes = (started - change.at).total_seconds() / 60.0
    if minutes < -1:
        return 0.55
    if minutes <= 15:
        return 1.0
    return max(0.3, 1.0 - (minutes - 15) / 120.0)


def read_changes(collector: Collector, obs: Observations, handler: Handler) -> list[Item]:
    journal = collector.journal
    if journal is None:
        obs.gaps.append("no change journal: recent changes unknown")
        return []
    step = handler.collect.changes
    since = obs.started_at - timedelta(seconds=step.lookback_s)
    found = collector.read_many(
        obs, "change journal", lambda: journal.changes(obs.scope, since, obs.now, list(step.kinds))
    )
    found = sorted(found, key=lambda c: c.at, reverse=True)[: step.limit]
    items = []
    for i, change in enumerate(found):
        key = f"change:{i}"
        obs.changes.append((key, change))
        service = collector.service_of_object(obs, change.kind, change.name)
        if service:
            obs.cite(f"changes:{service}", key)
        before = (obs.started_at - change.at).total_seconds() / 60.0
        when = f"{before:.0f} min before the incident" if before >= 0 else "during the incident"
        lines = list(diff_lines(change.diff))
        items.append(
            make_item(
                key=key,
                kind=EvidenceKind.CHANGE,
                source=f"journal/{change.namespace}/{change.kind}/{change.name}",
                summary=f"{change.summary()} ({when}, {change.change_type.lower()})",
                service=service,
                detail="\n".join(lines[:40]),
                redactor=collector.redactor,
                relevance=proximity(change, obs.started_at)
                * (0.6 if change.manager == "stratus" else 1.0),
                at=change.at,
            )
        )
    return items


def diff_lines(diff: Mapping[str, tuple[Any, Any]]) -> Iterator[str]:
    for path, pair in diff.items():
        old, new = pair if isinstance(pair, tuple | list) and len(pair) == 2 else (None, pair)
        inner = list(json_diff(old, new))
        if inner:
            for sub, a, b in inner[:20]:
                yield f"{path} → {sub}: {_show(a)} → {_show(b)}"
        else:
            yield f"{path}: {_show(old)} → {_show(new)}"


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return clip(text, _VALUE_CAP)


def _json(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return None


def json_diff(old: Any, new: Any) -> Iterator[tuple[str, Any, Any]]:
    """Leaf differences of two JSON documents held as strings (a flag file in a ConfigMap)."""
    a, b = _json(old), _json(new)
    if a is None or b is None:
        return
    yield from _walk("", a, b)


def _walk(prefix: str, a: Any, b: Any) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            yield from _walk(f"{prefix}.{key}" if prefix else str(key), a.get(key), b.get(key))
    elif a != b:
        yield prefix, a, b


# ------------------------------------------------------------------- last known good


def read_drift(collector: Collector, obs: Observations, handler: Handler) -> list[Item]:
    journal = collector.journal
    if journal is None or not handler.collect.last_known_good:
        return []
    items = []
    for kind, name in _drift_targets(obs)[:12]:
        lkg = collector.read_one(
            obs, f"last known good of {kind}/{name}", _lkg(journal, obs, kind, name)
        )
        if lkg is None:
            continue
        diffs = list(_diff_object(collector, obs, kind, name, lkg))
        if not diffs:
            continue
        items.append(_drift_item(collector, obs, kind, name, diffs))
    return items


def _drift_targets(obs: Observations) -> list[tuple[str, str]]:
    """The changed objects that have a last known good to compare with, once each, newest
    change first."""
    targets: list[tuple[str, str]] = []
    for _, change in obs.changes:
        kinds = ("Deployment", "StatefulSet", "Service", "ConfigMap")
        if change.kind in kinds and (change.kind, change.name) not in targets:
            targets.append((change.kind, change.name))
    return targets


def _drift_item(
    collector: Collector, obs: Observations, kind: str, name: str, diffs: list[FieldDiff]
) -> Item:
    key = f"drift:{kind}/{name}"
    service = collector.service_of_object(obs, kind, name)
    for d in diffs:
        obs.drift.append((key, d))
    if service:
        obs.cite(f"drift:{service}", key)
    return make_item(
        key=key,
        kind=EvidenceKind.CONFIG,
        source=f"last-known-good/{obs.scope.namespace}/{kind}/{name}",
        summary=f"{kind}/{name} differs from its last known good: "
        + ", ".join(d.path for d in diffs[:4])
        + (f" (+{len(diffs) - 4})" if len(diffs) > 4 else ""),
        service=service,
        detail="\n".join(_drift_lines(diffs)[:60]),
        redactor=collector.redactor,
        relevance=0.9,
    )


def _drift_lines(diffs: list[FieldDiff]) -> list[str]:
    lines = []
    for d in diffs:
        inner = list(json_diff(d.old, d.new))
        if inner:
            lines += [f"{d.path} → {s}: {_show(x)} → {_show(y)}" for s, x, y in inner[:20]]
        else:
            lines.append(f"{d.path}: {_show(d.old)} → {_show(d.new)}")
    return lines


def _lkg(
    journal: JournalView, obs: Observations, kind: str, name: str
) -> Callable[[], JsonObject | None]:
    def read() -> JsonObject | None:
        return journal.last_known_good(obs.scope, kind, name, obs.started_at)

    return read


#: One field's difference (None when equal), already bound to the object's kind and name.
_Diff = Callable[[str, Any, Any], FieldDiff | None]


def _diff_object(
    collector: Collector, obs: Observations, kind: str, name: str, lkg: JsonObject
) -> Iterator[FieldDiff]:
    redactor = collector.redactor

    def diff(path: str, old: Any, new: Any) -> FieldDiff | None:
        if old == new:
            return None
        return FieldDiff(
            kind=kind,
            name=name,
            path=path,
            old=None if old is None else str(old),
            new=None if new is None else str(new),
        )

    differ = _DIFFERS.get(kind)
    found = differ(diff, obs, name, lkg, redactor) if differ is not None else []
    yield from (d for d in found if d is not None)


def _workload_diffs(
    diff: _Diff, obs: Observations, name: str, lkg: JsonObject, redactor: Redactor
) -> list[FieldDiff | None]:
    now = obs.specs.get(name)
    if now is None:
        return []
    was = parse_workload_spec(lkg, redactor)
    found: list[FieldDiff | None] = []
    found.append(diff("spec.replicas", was.replicas, now.replicas))
    prefix = "spec.template.spec"
    found.append(diff(f"{prefix}.nodeSelector", _m(was.node_selector), _m(now.node_selector)))
    found.append(diff(f"{prefix}.affinity", was.has_affinity, now.has_affinity))
    found.append(diff(f"{prefix}.tolerations", list(was.tolerations), list(now.tolerations)))
    for c in now.containers:
        old = next((o for o in was.containers if o.name == c.name), None)
        if old is None:
            continue
        found += _container_diffs(diff, f"{prefix}.containers[{c.index}]", old, c)
    return found


def _container_diffs(
    diff: _Diff, at: str, old: ContainerSpec, c: ContainerSpec
) -> list[FieldDiff | None]:
    found: list[FieldDiff | None] = []
    found.append(diff(f"{at}.image", old.image, c.image))
    found.append(diff(f"{at}.command", list(old.command), list(c.command)))
    found.append(diff(f"{at}.args", list(old.args), list(c.args)))
    found.append(diff(f"{at}.ports", list(old.ports), list(c.ports)))
    found.append(diff(f"{at}.resources.limits.cpu", old.cpu_limit_millis, c.cpu_limit_millis))
    found.append(
        diff(f"{at}.resources.limits.memory", old.memory_limit_bytes, c.memory_limit_bytes)
    )
    found.append(diff(f"{at}.resources.requests.cpu", old.cpu_request_millis, c.cpu_request_millis))
    found.append(
        diff(
            f"{at}.resources.requests.memory",
            old.memory_request_bytes,
            c.memory_request_bytes,
        )
    )
    found += _env_diffs(diff, at, old.env, c.env)
    return found


def _env_diffs(
    diff: _Diff, at: str, was: Sequence[EnvVar], env: Sequence[EnvVar]
) -> list[FieldDiff | None]:
    found: list[FieldDiff | None] = []
    olds = {e.name: e for e in was}
    for j, e in enumerate(env):
        before = olds.get(e.name)
        if before is None:
            found.append(diff(f"{at}.env[{j}]", None, e.name))
        elif (before.value, before.config_map, before.key) != (
            e.value,
            e.config_map,
            e.key,
        ):
            found.append(
                diff(
                    f"{at}.env[{j}].value" if e.value is not None else f"{at}.env[{j}]",
                    before.value or f"{before.config_map}/{before.key}",
                    e.value or f"{e.config_map}/{e.key}",
                )
            )
    return found


def _service_diffs(
    diff: _Diff, obs: Observations, name: str, lkg: JsonObject, redactor: Redactor
) -> list[FieldDiff | None]:
    now_svc = obs.services.get(name)
    if now_svc is None:
        return []
    was_svc = parse_service_spec(lkg, 0)
    found: list[FieldDiff | None] = []
    found.append(diff("spec.selector", _m(was_svc.selector), _m(now_svc.selector)))
    for i, p in enumerate(now_svc.ports):
        if i < len(was_svc.ports):
            found.append(diff(f"spec.ports[{i}].port", was_svc.ports[i].port, p.port))
            found.append(
                diff(f"spec.ports[{i}].targetPort", was_svc.ports[i].target_port, p.target_port)
            )
    return found


def _config_map_diffs(
    diff: _Diff, obs: Observations, name: str, lkg: JsonObject, redactor: Redactor
) -> list[FieldDiff | None]:
    now_cm = obs.config_maps.get(name)
    if now_cm is None:
        return []
    raw = lkg.get("data") if isinstance(lkg.get("data"), dict) else {}
    was_data = redact_mapping({str(k): str(v) for k, v in (raw or {}).items()}, redactor)
    found: list[FieldDiff | None] = []
    for key in sorted(set(was_data) | set(now_cm.data)):
        found.append(diff(f"data.{key}", was_data.get(key), now_cm.data.get(key)))
    return found


#: How each kind with a last known good is compared with what runs now.
_DIFFERS: dict[
    str,
    Callable[[_Diff, Observations, str, JsonObject, Redactor], list[FieldDiff | None]],
] = {
    "Deployment": _workload_diffs,
    "StatefulSet": _workload_diffs,
    "Service": _service_diffs,
    "ConfigMap": _config_map_diffs,
}


def _m(mapping: Mapping[str, str]) -> dict[str, str]:
    return dict(sorted(mapping.items()))
