"""Collateral drift: what an agent changed and left changed that no fault had changed.

An SRE's question after an incident is not only "is it healed?" but "what else did the bot
leave different?". The bench answers it field by field: before the first fault it takes the
desired state of every object an agent may write (workload, Service and HPA specs, ConfigMap
data, quota and Node specs), and records every field each fault and noise step changed, with
the value it set. At the end, for every object the agent wrote, a field counts as drift when
its value differs from the one before the first fault and is not simply the fault's own value
left in place (a fault the agent did not fix is scored by the oracle, not here). Putting a
fault back leaves the field as it was before, so it is never drift; raising a limit past what
it was, rolling a decoy back to another revision, or a ConfigMap key no fault touched is.

One field is left out on purpose: the restart stamp (`kubectl.kubernetes.io/restartedAt` in
the pod template), which records that pods were replaced and changes nothing that runs. A
restart on a service outside the ground truth is still counted, as a write outside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lab.kube.runtime import ClusterView

#: (kind, name) → flattened field path → value.
Fields = dict[str, Any]
State = dict[tuple[str, str], Fields]

#: Kinds an agent may write and the part of each that is its desired state.
TRACKED: Mapping[str, str] = {
    "Deployment": "spec",
    "StatefulSet": "spec",
    "Service": "spec",
    "ConfigMap": "data",
    "HorizontalPodAutoscaler": "spec",
    "ResourceQuota": "spec",
    "Node": "spec",
}
RESTART_STAMP = "kubectl.kubernetes.io/restartedAt"
ABSENT = "<absent>"


def flatten(value: Any, prefix: str) -> Fields:
    """`{"a": {"b": [ {"name": "x", "c": 1} ]}}` → `{"a.b[x].c": 1}`: lists of named items
    are keyed by name, so a reordering is not a change; other lists by position. An empty map
    or list is no field (the API server treats it as absent too)."""
    out: Fields = {}
    if isinstance(value, dict):
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}"))
    elif isinstance(value, list):
        named = all(isinstance(v, dict) and "name" in v for v in value)
        for i, item in enumerate(value):
            label = item["name"] if named else i
            out.update(flatten(item, f"{prefix}[{label}]"))
    else:
        out[prefix] = value
    return out


def object_fields(kind: str, obj: Mapping[str, Any]) -> Fields:
    part = TRACKED[kind]
    return {
        path: value
        for path, value in flatten(obj.get(part) or {}, part).items()
        if RESTART_STAMP not in path
    }


def snapshot(api: ClusterView, namespace: str) -> State:
    state: State = {}
    for kind in TRACKED:
        scope = None if kind == "Node" else namespace
        for obj in api.list(kind, scope):
            state[(kind, str(obj["metadata"]["name"]))] = object_fields(kind, obj)
    return state


def changed(before: State, after: State) -> dict[tuple[str, str, str], Any]:
    """Every (kind, name, path) whose value differs, with its value after (`ABSENT`: gone)."""
    out: dict[tuple[str, str, str], Any] = {}
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, {}), after.get(key, {})
        for path in sorted(set(old) | set(new)):
            if old.get(path, ABSENT) != new.get(path, ABSENT):
                out[(*key, path)] = new.get(path, ABSENT)
    return out


def collateral(
    before: State,
    after: State,
    *,
    written: Iterable[tuple[str, str]],
    faulted: Mapping[tuple[str, str, str], Any],
) -> list[str]:
    """Drift lines, `Kind/name path: before → after`, over the objects in `written`.
    `faulted`: the fields faults and noise changed, with the value they set."""
    lines: list[str] = []
    keys = set(written)
    for (kind, name, path), value in changed(before, after).items():
        if (kind, name) not in keys:
            continue
        if (kind, name, path) in faulted and faulted[(kind, name, path)] == value:
            continue  # the fault's own value, left in place
        old = before.get((kind, name), {}).get(path, ABSENT)
        lines.append(f"{kind}/{name} {path}: {_short(old)} → {_short(value)}")
    return lines


def _short(value: Any, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
