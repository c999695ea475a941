"""Who made a change: attribution from `metadata.managedFields`.

The API server records, per field manager, which fields it owns (FieldsV1: `f:name` for map
keys, `k:{"name":"geo"}` for keyed list items) and when it last wrote them. A manager that
changes a field takes it over from the others. So the author of a change is the manager that
owns the changed fields most precisely — not simply the newest entry, which after a rollout is
often the deployment controller bumping its revision annotation. Among equally precise owners
the most recent wins; entries older than the previous state the journal recorded cannot have
made this change and are passed over. The status subresource is never an author of spec
changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agents.kubeparse import parse_time

UNKNOWN_MANAGER = "unknown"

_PATH_PART = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


@dataclass(frozen=True, slots=True, kw_only=True)
class Attribution:
    manager: str
    operation: str | None = None  # Update | Apply
    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    manager: str
    operation: str | None
    at: datetime | None
    fields: Mapping[str, Any]


def _entries(managed_fields: Any) -> list[_Entry]:
    entries = []
    for raw in managed_fields if isinstance(managed_fields, list) else []:
        if not isinstance(raw, dict) or raw.get("subresource") == "status":
            continue
        fields = raw.get("fieldsV1")
        entries.append(
            _Entry(
                manager=str(raw.get("manager") or UNKNOWN_MANAGER),
                operation=str(raw["operation"]) if raw.get("operation") else None,
                at=parse_time(raw.get("time")),
                fields=fields if isinstance(fields, dict) else {},
            )
        )
    return entries


def _parts(path: str) -> list[tuple[str, bool]]:
    """`spec.containers[geo].image` → [(spec, False), (containers, False), (geo, True),
    (image, False)]: True marks a keyed list item."""
    return [(m[1] or m[2], bool(m[2])) for m in _PATH_PART.finditer(path)]


def _item_key(fields: Mapping[str, Any], name: str) -> str | None:
    for key in fields:
        if not key.startswith("k:"):
            continue
        try:
            item = json.loads(key[2:])
        except ValueError:
            continue
        if isinstance(item, dict) and name in (str(v) for v in item.values()):
            return key
    return None


def _depth(fields: Mapping[str, Any], path: str) -> int:
    """How many components of `path` the field set owns, from the top."""
    node: Any = fields
    depth = 0
    for part, keyed in _parts(path):
        if not isinstance(node, Mapping):
            break
        key = _item_key(node, part) if keyed else f"f:{part}"
        if key is None or key not in node:
            break
        node, depth = node[key], depth + 1
    return depth


def attribute(
    managed_fields: Any,
    changed_paths: Iterable[str] = (),
    *,
    not_before: datetime | None = None,
) -> Attribution:
    """The manager, operation and time of the change to `changed_paths` (field paths as
    `agents.actions.snapshot.field_changes` writes them). With no paths (a first sight, a
    deletion), the newest entry."""
    entries = _entries(managed_fields)
    if not_before is not None:
        floor = not_before.replace(microsecond=0)  # managedFields times have whole seconds
        entries = [e for e in entries if e.at is None or e.at >= floor]
    if not entries:
        return Attribution(manager=UNKNOWN_MANAGER)
    paths = list(changed_paths)
    oldest = datetime.min.replace(tzinfo=None)

    def rank(e: _Entry) -> tuple[int, datetime]:
        depth = max((_depth(e.fields, p) for p in paths), default=0)
        at = e.at.replace(tzinfo=None) if e.at is not None else oldest
        return depth, at

    best = max(entries, key=rank)
    return Attribution(manager=best.manager, operation=best.operation, at=best.at)
