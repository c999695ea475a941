"""Snapshots, comparisons and diffs of Kubernetes objects.

A snapshot is the object as the engine found it, minus what the server owns
(resourceVersion, uid, managedFields, creationTimestamp, generation, status). Re-applying it
is every action's inverse. The same cleaning defines "the object is back": two objects are
equal when their cleaned forms are.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from typing import Any

import yaml

from agents.model import JsonObject

SERVER_MANAGED_METADATA = (
    "resourceVersion",
    "uid",
    "managedFields",
    "creationTimestamp",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
#: Annotations the controllers write; restoring or comparing them would fight the controller.
CONTROLLER_ANNOTATIONS = frozenset(
    {"deployment.kubernetes.io/revision", "kubectl.kubernetes.io/last-applied-configuration"}
)


def clean(body: Mapping[str, Any]) -> JsonObject:
    """The object without server-managed fields: what a snapshot stores."""
    result: JsonObject = copy.deepcopy(dict(body))
    result.pop("status", None)
    meta = result.get("metadata")
    if isinstance(meta, dict):
        for key in SERVER_MANAGED_METADATA:
            meta.pop(key, None)
    return result


def comparable(body: Mapping[str, Any]) -> JsonObject:
    """`clean` minus controller-written annotations and empty defaults: the view in which
    "apply then undo leaves the object equal to the original" is checked."""
    result = clean(body)
    meta = result.get("metadata")
    if isinstance(meta, dict):
        annotations = {
            k: v
            for k, v in (meta.get("annotations") or {}).items()
            if k not in CONTROLLER_ANNOTATIONS
        }
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)
    return result


def restorable(snapshot: Mapping[str, Any], resource_version: str | None) -> JsonObject:
    """The snapshot ready to PUT over the live object read at `resource_version`."""
    body: JsonObject = copy.deepcopy(dict(snapshot))
    meta = body.setdefault("metadata", {})
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    return body


def to_yaml(body: Mapping[str, Any]) -> str:
    return yaml.safe_dump(comparable(body), sort_keys=True, default_flow_style=False)


def unified_diff(before: Mapping[str, Any], after: Mapping[str, Any], *, name: str = "") -> str:
    """What an approver reads: a unified diff of the two objects' YAML, server fields left out."""
    lines = difflib.unified_diff(
        to_yaml(before).splitlines(),
        to_yaml(after).splitlines(),
        fromfile=f"live/{name}" if name else "live",
        tofile=f"after/{name}" if name else "after",
        lineterm="",
        n=2,
    )
    return "\n".join(lines)


def field_changes(before: Any, after: Any, path: str = "") -> dict[str, list[Any]]:
    """Leaf paths whose values differ, as `{path: [old, new]}` (None for absent). Lists of
    mappings with a `name` key are matched by name, the way people read containers and env."""
    changes: dict[str, list[Any]] = {}
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in sorted(set(before) | set(after), key=str):
            sub = f"{path}.{key}" if path else str(key)
            changes.update(field_changes(before.get(key), after.get(key), sub))
        return changes
    if _named_list(before) and _named_list(after):
        b = {item["name"]: item for item in before}
        a = {item["name"]: item for item in after}
        for key in sorted(set(b) | set(a)):
            changes.update(field_changes(b.get(key), a.get(key), f"{path}[{key}]"))
        return changes
    if before != after:
        changes[path] = [before, after]
    return changes


def _named_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, Mapping) and "name" in item for item in value)
    )
