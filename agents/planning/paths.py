"""What a suspect's field path means to a planner, and how values travel between text and JSON.

Diagnosis names a suspect field as `kubectl explain` spells it
(`spec.template.spec.containers[0].image`, `data.GEO_MONGO_ADDR`); the change journal names
list items by their `name` (`containers[geo].image`); a language model may write either. The
planner does not navigate such paths generically — it *classifies* them into the few aspects
it knows how to fix (`Aspect`), keeping the container and key they point at. Keys of maps
that may contain dots (ConfigMap data, quota resources, label selectors) are taken whole.

Suspect values travel as strings (`"8083"`, `"['geo']"`, `"{'app': 'geo'}"`): `literal`
turns them back into JSON values without evaluating anything. A value that hides a secret
(`REDACTED` markers of either redactor) is never restored.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agents.redact import REDACTED, contains_redacted

#: The marker of the diagnosis redactor that `agents.redact` replaced: journals and incidents
#: stored before may still hold it.
DIAGNOSIS_MASK = "[REDACTED]"

_C = r"^spec\.template\.spec\.containers\[(?P<c>[^\]]*)\]"


class Aspect(StrEnum):
    REPLICAS = "replicas"
    IMAGE = "image"
    COMMAND = "command"
    ARGS = "args"
    ENV = "env"
    LIMIT_MEMORY = "limits.memory"
    LIMIT_CPU = "limits.cpu"
    REQUEST_MEMORY = "requests.memory"
    REQUEST_CPU = "requests.cpu"
    RESOURCES = "resources"
    NODE_SELECTOR = "nodeSelector"
    TOLERATIONS = "tolerations"
    AFFINITY = "affinity"
    TEMPLATE = "template"  # another field of a workload's pod template
    SERVICE_SELECTOR = "service.selector"
    SERVICE_PORTS = "service.ports"
    CONFIG_KEY = "data.key"
    CONFIG_DATA = "data"  # the ConfigMap as a whole (missing)
    QUOTA_HARD = "quota.hard"
    NODE = "node"
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldRef:
    """A classified field path: which aspect, of which container or key."""

    aspect: Aspect
    path: str
    container: str | None = None  # an index ("0") or a name ("geo"), as the path said
    key: str | None = None  # env var, ConfigMap key, quota resource, port index

    @property
    def container_index(self) -> int | None:
        return int(self.container) if self.container and self.container.isdigit() else None


_WORKLOAD_PATTERNS: tuple[tuple[re.Pattern[str], Aspect], ...] = (
    (re.compile(r"^spec\.replicas$"), Aspect.REPLICAS),
    (re.compile(_C + r"\.image$"), Aspect.IMAGE),
    (re.compile(_C + r"\.command(\[[^\]]*\])?$"), Aspect.COMMAND),
    (re.compile(_C + r"\.args(\[[^\]]*\])?$"), Aspect.ARGS),
    (re.compile(_C + r"\.env(\[(?P<k>[^\]]*)\])?(\..*)?$"), Aspect.ENV),
    (re.compile(_C + r"\.resources\.limits\.memory$"), Aspect.LIMIT_MEMORY),
    (re.compile(_C + r"\.resources\.limits\.cpu$"), Aspect.LIMIT_CPU),
    (re.compile(_C + r"\.resources\.requests\.memory$"), Aspect.REQUEST_MEMORY),
    (re.compile(_C + r"\.resources\.requests\.cpu$"), Aspect.REQUEST_CPU),
    (re.compile(_C + r"\.resources(\..*)?$"), Aspect.RESOURCES),
    (re.compile(r"^spec\.template\.spec\.nodeSelector(\..*)?$"), Aspect.NODE_SELECTOR),
    (re.compile(r"^spec\.template\.spec\.tolerations(\[.*)?$"), Aspect.TOLERATIONS),
    (re.compile(r"^spec\.template\.spec\.affinity(\..*)?$"), Aspect.AFFINITY),
    (re.compile(r"^spec\.template(\..*)?$"), Aspect.TEMPLATE),
)
_SERVICE_PORTS = re.compile(r"^spec\.ports(\[(?P<k>\d+)\])?(\..*)?$")
_WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet"})


def classify(kind: str, path: str) -> FieldRef:
    """The aspect of `kind`'s field at `path` (OTHER when the planner knows no fix for it)."""
    classifier = _CLASSIFIERS.get(kind)
    found = classifier(path) if classifier is not None else None
    return found if found is not None else FieldRef(aspect=Aspect.OTHER, path=path)


def _workload_field(path: str) -> FieldRef | None:
    for pattern, aspect in _WORKLOAD_PATTERNS:
        match = pattern.match(path)
        if match is not None:
            groups = match.groupdict()
            return FieldRef(
                aspect=aspect, path=path, container=groups.get("c"), key=groups.get("k")
            )
    return None


def _service_field(path: str) -> FieldRef | None:
    if path == "spec.selector" or path.startswith("spec.selector."):
        key = path[len("spec.selector.") :] or None
        return FieldRef(aspect=Aspect.SERVICE_SELECTOR, path=path, key=key)
    match = _SERVICE_PORTS.match(path)
    if match is not None:
        return FieldRef(aspect=Aspect.SERVICE_PORTS, path=path, key=match["k"])
    return None


def _config_map_field(path: str) -> FieldRef | None:
    if path in ("data", "binaryData"):
        return FieldRef(aspect=Aspect.CONFIG_DATA, path=path)
    if path.startswith("data."):
        return FieldRef(aspect=Aspect.CONFIG_KEY, path=path, key=path[len("data.") :])
    return None


def _quota_field(path: str) -> FieldRef | None:
    if path == "spec.hard" or path.startswith("spec.hard."):
        return FieldRef(aspect=Aspect.QUOTA_HARD, path=path, key=path[len("spec.hard.") :] or None)
    return None


def _node_field(path: str) -> FieldRef | None:
    return FieldRef(aspect=Aspect.NODE, path=path)


#: How each kind's field paths are classified; a kind not here, or a path its classifier does
#: not know (None), is OTHER.
_CLASSIFIERS: dict[str, Callable[[str], FieldRef | None]] = {
    **dict.fromkeys(_WORKLOAD_KINDS, _workload_field),
    "Service": _service_field,
    "ConfigMap": _config_map_field,
    "ResourceQuota": _quota_field,
    "Node": _node_field,
}


def normalised(path: str) -> str:
    """A path with list positions and names erased: `containers[0]` ~ `containers[geo]`."""
    return re.sub(r"\[[^\]]*\]", "[]", path)


def related(a: str, b: str) -> bool:
    """Do two field paths name the same field, or one a part of the other?"""
    x, y = normalised(a), normalised(b)
    return x == y or x.startswith(y + ".") or y.startswith(x + ".") or _list_prefix(x, y)


def _list_prefix(x: str, y: str) -> bool:
    return x.startswith(y + "[") or y.startswith(x + "[")


# ------------------------------------------------------------------------------ values


def hides_secret(value: Any) -> bool:
    """A value the redactors masked: restoring it would write the marker, not the secret."""
    if contains_redacted(value):
        return True
    return _contains(value, DIAGNOSIS_MASK)


def _contains(value: Any, marker: str) -> bool:
    if isinstance(value, str):
        return marker in value
    if isinstance(value, dict):
        return any(_contains(v, marker) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_contains(v, marker) for v in value)
    return False


def literal(text: str | None) -> Any:
    """A suspect's string back as a JSON value: Python or JSON literals (lists, maps,
    numbers, booleans) are parsed, anything else stays the string it is. Never evaluates."""
    if text is None:
        return None
    stripped = text.strip()
    if stripped[:1] in "[{" or stripped in ("True", "False", "None"):
        for parse in (json.loads, ast.literal_eval):
            try:
                return parse(stripped)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    return text


def as_int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(str(text).strip())
    except ValueError:
        return None


def short(value: Any, limit: int = 80) -> str:
    """A value as a human reads it in a rationale: one line, bounded, secrets shown masked."""
    if hides_secret(value):
        return REDACTED
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


# ---------------------------------------------------------------------------- quantities

_MI = 1024**2
_GI = 1024**3


def memory_quantity(byte_count: int) -> str:
    """Bytes as the quantity a person would write: whole Gi, else whole Mi."""
    if byte_count % _GI == 0:
        return f"{byte_count // _GI}Gi"
    return f"{math.ceil(byte_count / _MI)}Mi"


def round_memory_up(byte_count: int) -> int:
    """Up to a sane step: 64Mi below 1Gi, 256Mi above (no "437Mi" limits)."""
    step = 64 * _MI if byte_count <= _GI else 256 * _MI
    return max(step, math.ceil(byte_count / step) * step)


def cpu_quantity(millis: int) -> str:
    return f"{millis // 1000}" if millis % 1000 == 0 else f"{millis}m"


def round_cpu_up(millis: int) -> int:
    """Up to 100m steps below 1 CPU, 250m steps above."""
    step = 100 if millis <= 1000 else 250
    return max(step, math.ceil(millis / step) * step)


__all__ = [
    "REDACTED",
    "Aspect",
    "FieldRef",
    "as_int",
    "classify",
    "cpu_quantity",
    "hides_secret",
    "literal",
    "memory_quantity",
    "normalised",
    "related",
    "round_cpu_up",
    "round_memory_up",
    "short",
]
