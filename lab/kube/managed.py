"""managedFields: who set which field, and when.

Stratus's change journal reads managedFields to answer "who changed what just before it
broke", so the emulator keeps them the way the real server does for Update operations: the
manager of a write owns every field the write changed, other managers lose those fields, and a
manager left owning nothing disappears. Field sets are serialized as FieldsV1 (`f:` for map
keys, `k:{...}` for keyed list items, `v:` for set members, `.` for an item itself).
"""

from __future__ import annotations

import json
from typing import Any

from agents.model import JsonObject
from lab.kube.mergekeys import PRIMITIVE_SETS, merge_key

Path = tuple[str, ...]

#: Metadata the system owns; never part of a manager's field set.
_SYSTEM_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
        "generateName",
    }
)


def _leaf(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _flatten_value(value: Any, path: Path, field: str, out: dict[Path, str]) -> None:
    if isinstance(value, dict):
        if not value:
            out[path] = "{}"
            return
        for key, item in value.items():
            _flatten_value(item, (*path, f"f:{key}"), key, out)
        return
    if isinstance(value, list):
        if field in PRIMITIVE_SETS and all(not isinstance(v, dict | list) for v in value):
            if not value:
                out[path] = "[]"
            for item in value:
                out[(*path, f"v:{_leaf(item)}")] = ""
            return
        key = merge_key(field, value)
        if key is None or not all(isinstance(v, dict) and key in v for v in value):
            out[path] = _leaf(value)
            return
        if not value:
            out[path] = "[]"
        for item in value:
            element = (*path, f"k:{_leaf({key: item[key]})}")
            out[(*element, ".")] = ""
            for sub_key, sub_value in item.items():
                _flatten_value(sub_value, (*element, f"f:{sub_key}"), sub_key, out)
        return
    out[path] = _leaf(value)


def flatten(obj: JsonObject, subresource: str) -> dict[Path, str]:
    """Every leaf field of the part of `obj` a write to `subresource` ("" or "status") owns."""
    out: dict[Path, str] = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if subresource == "status" and key != "status":
            continue
        if subresource != "status" and key == "status":
            continue
        if key == "metadata" and isinstance(value, dict):
            for meta_key, meta_value in value.items():
                if meta_key not in _SYSTEM_METADATA:
                    _flatten_value(meta_value, ("f:metadata", f"f:{meta_key}"), meta_key, out)
            continue
        _flatten_value(value, (f"f:{key}",), key, out)
    return out


def _to_fields_v1(paths: set[Path]) -> JsonObject:
    root: JsonObject = {}
    for path in sorted(paths):
        node = root
        for element in path:
            node = node.setdefault(element, {})
    return root


def _from_fields_v1(fields: Any, prefix: Path = ()) -> set[Path]:
    paths: set[Path] = set()
    if not isinstance(fields, dict):
        return paths
    for key, child in fields.items():
        path = (*prefix, key)
        if isinstance(child, dict) and child:
            paths |= _from_fields_v1(child, path)
        else:
            paths.add(path)
    return paths


def _covered(path: Path, changed: set[Path]) -> bool:
    """Whether `path` (or an ancestor of it) changed."""
    return any(path[:i] in changed for i in range(1, len(path) + 1))


def update(
    old: JsonObject | None,
    new: JsonObject,
    *,
    manager: str,
    operation: str,
    subresource: str,
    api_version: str,
    time: str,
) -> list[JsonObject]:
    """The managedFields of `new` after `manager` wrote it over `old` (None on create)."""
    entries: list[JsonObject] = list((old or {}).get("metadata", {}).get("managedFields") or [])
    before = flatten(old, subresource) if old is not None else {}
    after = flatten(new, subresource)
    changed = {p for p, v in after.items() if before.get(p) != v}
    removed = {p for p in before if p not in after}
    if not changed and not removed:
        return entries
    result: list[JsonObject] = []
    mine: set[Path] = set()
    for entry in entries:
        same_manager = (
            entry.get("manager") == manager
            and entry.get("operation") == operation
            and entry.get("subresource", "") == subresource
        )
        paths = _from_fields_v1(entry.get("fieldsV1"))
        if same_manager:
            mine = paths
            continue
        if entry.get("subresource", "") == subresource:
            paths = {p for p in paths if not _covered(p, changed) and p not in removed}
            if not paths:
                continue
            result.append({**entry, "fieldsV1": _to_fields_v1(paths)})
            continue
        result.append(entry)
    mine = {p for p in mine if p not in removed and p in after} | changed
    if mine:
        own: JsonObject = {
            "manager": manager,
            "operation": operation,
            "apiVersion": api_version,
            "time": time,
            "fieldsType": "FieldsV1",
            "fieldsV1": _to_fields_v1(mine),
        }
        if subresource:
            own["subresource"] = subresource
        result.append(own)
    return result
