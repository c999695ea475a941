"""Label and field selectors, parsed once and matched many times.

Label selectors follow the real grammar: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`,
`k`, `!k` (and `k>n`, `k<n`), comma-joined. Field selectors support `=`, `==` and `!=` on the
fields the real server indexes for each kind; any other field is a 400, as there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agents.model import JsonObject
from lab.kube.errors import BadRequest

_KEY = re.compile(
    r"^([a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?/)?[a-zA-Z0-9]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?$"
)


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "in", "notin", "exists", "!exists", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        value = labels.get(self.key)
        if self.op == "in":
            return value is not None and value in self.values
        if self.op == "notin":
            return value is None or value not in self.values
        if value is None:
            return False
        try:
            number, bound = int(value), int(self.values[0])
        except ValueError:
            return False
        return number > bound if self.op == "gt" else number < bound


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()
    #: A selector that matches nothing (a nil LabelSelector on a workload).
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.nothing


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _bad(text: str, why: str) -> BadRequest:
    return BadRequest(f"unable to parse requirement: {why}: {text!r}")


def _check_key(key: str, text: str) -> str:
    if not key or len(key) > 317 or not _KEY.match(key):
        raise _bad(text, f"invalid label key {key!r}")
    return key


_SET_OP = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the string form (`?labelSelector=`). Raises BadRequest."""
    text = text.strip()
    if not text:
        return EVERYTHING
    requirements: list[Requirement] = []
    for raw in _split_top_level(text):
        part = raw.strip()
        if not part:
            raise _bad(text, "found '', expected: identifier")
        set_match = _SET_OP.match(part)
        if set_match:
            key, op, values = set_match.groups()
            items = tuple(v.strip() for v in values.split(",") if v.strip())
            requirements.append(Requirement(_check_key(key, text), op, items))
            continue
        if part.startswith("!"):
            requirements.append(Requirement(_check_key(part[1:].strip(), text), "!exists"))
            continue
        for token, op in (("==", "in"), ("!=", "notin"), ("=", "in"), (">", "gt"), ("<", "lt")):
            if token in part:
                key, _, value = part.partition(token)
                value = value.strip()
                if op in ("gt", "lt") and not value.lstrip("-").isdigit():
                    raise _bad(text, "for 'Gt', 'Lt' operators, the value must be an integer")
                requirements.append(Requirement(_check_key(key.strip(), text), op, (value,)))
                break
        else:
            requirements.append(Requirement(_check_key(part, text), "exists"))
    return LabelSelector(tuple(requirements))


_EXPRESSION_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}


def from_label_selector(selector: Mapping[str, Any] | None) -> LabelSelector:
    """The matcher of a `metav1.LabelSelector` (matchLabels + matchExpressions). A missing
    selector matches nothing, an empty one everything, as for workloads."""
    if selector is None:
        return NOTHING
    requirements = [
        Requirement(str(k), "in", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()
    ]
    for expression in selector.get("matchExpressions") or []:
        op = _EXPRESSION_OPS.get(str(expression.get("operator", "")))
        if op is None:
            return NOTHING
        values = tuple(str(v) for v in expression.get("values") or [])
        requirements.append(Requirement(str(expression.get("key", "")), op, values))
    return LabelSelector(tuple(requirements))


def from_match_labels(labels: Mapping[str, str] | None) -> LabelSelector:
    """A Service's selector: a plain map; empty or missing selects nothing."""
    if not labels:
        return NOTHING
    return LabelSelector(tuple(Requirement(k, "in", (v,)) for k, v in labels.items()))


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """The string form of a LabelSelector (kubectl's SELECTOR column, the Scale status)."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, op = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(str(v) for v in expression.get("values") or []))
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }.get(op, key)
        )
    return ",".join(parts)


# --------------------------------------------------------------------------- field selectors

FieldGetter = Callable[[JsonObject], str]


def _path(*keys: str, default: str = "") -> FieldGetter:
    def get(obj: JsonObject) -> str:
        value: Any = obj
        for key in keys:
            if not isinstance(value, dict):
                return default
            value = value.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return get


_COMMON: dict[str, FieldGetter] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}

_EVENT_FIELDS: dict[str, FieldGetter] = {
    **{
        f"involvedObject.{f}": _path("involvedObject", f)
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    },
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _path("source", "component"),
    "type": _path("type"),
}

FIELDS: dict[str, dict[str, FieldGetter]] = {
    "Pod": {
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": _path("spec", "hostNetwork", default="false"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "Event": _EVENT_FIELDS,
    "Node": {"spec.unschedulable": _path("spec", "unschedulable", default="false")},
    "Namespace": {"status.phase": _path("status", "phase")},
    "Secret": {"type": _path("type")},
    "ReplicaSet": {"status.replicas": _path("status", "replicas", default="0")},
    "Service": {"spec.clusterIP": _path("spec", "clusterIP"), "spec.type": _path("spec", "type")},
}


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    getter: FieldGetter
    value: str
    equal: bool

    def matches(self, obj: JsonObject) -> bool:
        return (self.getter(obj) == self.value) == self.equal


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()
    #: `metadata.name=x` lets the store look one object up instead of scanning.
    name: str | None = None
    namespace: str | None = None

    def matches(self, obj: JsonObject) -> bool:
        return all(r.matches(obj) for r in self.requirements)


def parse_field_selector(text: str, kind: str) -> FieldSelector:
    """Parse `?fieldSelector=` for `kind`. Raises BadRequest for unknown fields."""
    text = text.strip()
    if not text:
        return FieldSelector()
    known = {**_COMMON, **FIELDS.get(kind, {})}
    requirements: list[FieldRequirement] = []
    name = namespace = None
    for raw in text.split(","):
        part = raw.strip()
        for operator, is_equal in (("!=", False), ("==", True), ("=", True)):
            if operator in part:
                field_name, _, value = part.partition(operator)
                equal = is_equal
                break
        else:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{part}'")
        field_name = field_name.strip()
        getter = known.get(field_name)
        if getter is None:
            raise BadRequest(
                f"field label not supported: {field_name}"
                if kind
                else f'"{field_name}" is not a known field selector'
            )
        requirements.append(FieldRequirement(getter, value.strip(), equal))
        if equal and field_name == "metadata.name":
            name = value.strip()
        if equal and field_name == "metadata.namespace":
            namespace = value.strip()
    return FieldSelector(tuple(requirements), name=name, namespace=namespace)
