"""What every action in the catalog is, and how actions travel as JSON.

An action is a typed, frozen value: what it targets, how risky it is, and how it turns the live
object into the desired one (`desired`). Its inverse is always the same: re-apply the snapshot
the engine took before writing (DESIGN section 3, rule 3). That uniformity is deliberate — an
action never needs hand-written undo code, so an action cannot have a wrong undo.

An action that has no inverse (exec into a container, data changes, deleting a namespace, PVC
or PV) exists only so that a planner or a language model can *ask* for it; admission refuses it
before any write and the incident escalates with a runbook text.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar, cast, runtime_checkable

from agents.errors import Invalid
from agents.model import JsonObject, KubeObject, ObjectRef, Risk
from agents.ports import ClusterReader


@dataclass(frozen=True, slots=True, kw_only=True)
class Replace:
    """Write `obj` in place of the live object (PUT with the live resourceVersion)."""

    obj: KubeObject


@dataclass(frozen=True, slots=True, kw_only=True)
class Delete:
    """Delete the target. Only admitted when its controller brings it back (a pod)."""

    ref: ObjectRef


Write = Replace | Delete


@runtime_checkable
class Action(Protocol):
    """The interface every catalog entry has (each is a frozen dataclass)."""

    kind: ClassVar[str]
    #: Kinds the action may target; admission refuses any other.
    target_kinds: ClassVar[frozenset[str]]
    #: False for requests that exist only to be refused (no inverse).
    has_inverse: ClassVar[bool]

    @property
    def target(self) -> ObjectRef: ...

    @property
    def risk(self) -> Risk: ...

    def describe(self) -> str:
        """One line a human approves, e.g. "Scale Deployment/hotel/geo from 0 to 1"."""
        ...

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        """The write that performs this action on `live`. Pure apart from reads."""
        ...


A = TypeVar("A", bound=Action)

_REGISTRY: dict[str, type[Any]] = {}


def register(cls: type[A]) -> type[A]:
    """Class decorator: makes the action known to `action_from_json`."""
    if cls.kind in _REGISTRY:
        raise ValueError(f"duplicate action kind {cls.kind!r}")
    _REGISTRY[cls.kind] = cls
    return cls


def action_kinds() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def _to_json_value(value: Any) -> Any:
    if isinstance(value, ObjectRef):
        return {
            "apiVersion": value.api_version,
            "kind": value.kind,
            "namespace": value.namespace,
            "name": value.name,
        }
    if isinstance(value, Mapping):
        return {str(k): _to_json_value(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_to_json_value(v) for v in value]
    return value


def ref_from_json(data: Mapping[str, Any]) -> ObjectRef:
    return ObjectRef(
        api_version=str(data["apiVersion"]),
        kind=str(data["kind"]),
        namespace=data.get("namespace"),
        name=str(data["name"]),
    )


def action_to_json(action: Action) -> JsonObject:
    """`{"kind": ..., <fields>}` with the target as `{"apiVersion","kind","namespace","name"}`."""
    body: JsonObject = {"kind": action.kind}
    for f in dataclasses.fields(cast(Any, action)):  # every catalog entry is a dataclass
        body[f.name] = _to_json_value(getattr(action, f.name))
    return body


def _from_json_value(value: Any, annotation: str) -> Any:
    if annotation.startswith("tuple") and isinstance(value, list):
        return tuple(value)
    return value


def action_from_json(data: Mapping[str, Any]) -> Action:
    """Inverse of `action_to_json`. Raises `Invalid` naming the field that is wrong."""
    kind = data.get("kind")
    cls = _REGISTRY.get(str(kind))
    if cls is None:
        known = ", ".join(action_kinds())
        raise Invalid(f"unknown action kind {kind!r} (known: {known})")
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise Invalid(f"action {kind}: missing field {f.name!r}")
            continue
        raw = data[f.name]
        if f.name == "target":
            try:
                values[f.name] = ref_from_json(raw)
            except (KeyError, TypeError) as e:
                raise Invalid(f"action {kind}: field 'target' is malformed: {raw!r}") from e
        else:
            values[f.name] = _from_json_value(raw, str(f.type))
    try:
        action: Action = cls(**values)
    except (TypeError, ValueError) as e:
        raise Invalid(f"action {kind}: {e}") from e
    return action


def actions_hash(actions: tuple[Action, ...] | list[Action]) -> str:
    """A stable hash of the exact contents of a list of actions; approvals bind to it."""
    canonical = json.dumps(
        [action_to_json(a) for a in actions], sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


# ------------------------------------------------------------------------------ body helpers


def mutable_copy(live: KubeObject) -> JsonObject:
    return copy.deepcopy(live.body)


def child(body: JsonObject, *path: str) -> JsonObject:
    """`body[path[0]][path[1]]...`, creating empty mappings on the way."""
    node = body
    for key in path:
        nxt = node.get(key)
        if not isinstance(nxt, dict):
            nxt = {}
            node[key] = nxt
        node = nxt
    return node


def pod_spec(body: JsonObject) -> JsonObject:
    """The pod spec of a workload (Deployment, StatefulSet, ...)."""
    return child(body, "spec", "template", "spec")


def container(body: JsonObject, name: str) -> JsonObject:
    """The named container of a workload's pod template; `Invalid` if it has none by that name."""
    containers = pod_spec(body).get("containers") or []
    for c in containers:
        if isinstance(c, dict) and c.get("name") == name:
            return c
    names = ", ".join(str(c.get("name")) for c in containers if isinstance(c, dict))
    raise Invalid(f"no container {name!r} in {body.get('kind')} (containers: {names})")
