"""Actions on objects other than workload specs: Services, ConfigMaps, pods, nodes, HPAs, and
the allowlisted JSON merge patch a language model may propose."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agents.actions.base import Delete, Replace, Write, child, mutable_copy, register
from agents.errors import Inadmissible, Invalid
from agents.model import JsonObject, KubeObject, ObjectRef, Risk
from agents.ports import ClusterReader


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class PatchService:
    """Replace a Service's ports and/or selector. None leaves a field as it is."""

    kind: ClassVar[str] = "patch_service"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"Service"})
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    ports: tuple[Mapping[str, Any], ...] | None = None  # Service port dicts, as in the spec
    selector: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if self.ports is None and self.selector is None:
            raise ValueError("patch_service changes nothing")
        if self.ports is not None and not self.ports:
            raise ValueError("a Service needs at least one port")

    @property
    def risk(self) -> Risk:
        return Risk.MEDIUM

    def describe(self) -> str:
        parts = []
        if self.ports is not None:
            parts.append(
                ", ".join(
                    f"port {p.get('port')} → targetPort {p.get('targetPort', p.get('port'))}"
                    for p in self.ports
                )
            )
        if self.selector is not None:
            shown = ",".join(f"{k}={v}" for k, v in sorted(self.selector.items()))
            parts.append(f"selector {shown}")
        return f"Set {' and '.join(parts)} on {self.target}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        spec = child(body, "spec")
        if self.ports is not None:
            spec["ports"] = [dict(p) for p in self.ports]
        if self.selector is not None:
            spec["selector"] = dict(self.selector)
        return Replace(obj=KubeObject(body))


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetConfigMapKeys:
    """Set (value) or remove (None) keys of a ConfigMap's data. Pods that read the ConfigMap
    at start see the change only after a restart: planners pair this with `RolloutRestart`."""

    kind: ClassVar[str] = "set_configmap"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"ConfigMap"})
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    values: Mapping[str, str | None]

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("set_configmap changes nothing")

    @property
    def risk(self) -> Risk:
        return Risk.MEDIUM

    def describe(self) -> str:
        changes = ", ".join(
            f"remove {k}" if v is None else f"{k}={_short(v)}"
            for k, v in sorted(self.values.items())
        )
        return f"Set {self.target}: {changes}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        data = child(body, "data")
        for key, value in self.values.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        return Replace(obj=KubeObject(body))


def _short(value: str, limit: int = 60) -> str:
    one_line = value.replace("\n", " ")
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class DeletePod:
    """Delete one controller-owned pod so that its controller replaces it. Nothing to restore:
    the controller is the inverse. A pod without a controller is refused."""

    kind: ClassVar[str] = "delete_pod"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"Pod"})
    has_inverse: ClassVar[bool] = True

    target: ObjectRef

    @property
    def risk(self) -> Risk:
        return Risk.LOW

    def describe(self) -> str:
        return f"Delete {self.target} (its controller recreates it)"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        owners = live.metadata.get("ownerReferences") or []
        if not any(isinstance(o, dict) and o.get("controller") for o in owners):
            raise Inadmissible(f"{self.target} has no controller: deleting it cannot be undone")
        return Delete(ref=self.target)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class CordonNode:
    """Cordon (or uncordon) a node: no new pods are scheduled on it."""

    kind: ClassVar[str] = "cordon"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"Node"})
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    cordon: bool = True

    @property
    def risk(self) -> Risk:
        return Risk.MEDIUM

    def describe(self) -> str:
        return f"{'Cordon' if self.cordon else 'Uncordon'} {self.target}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        spec = child(body, "spec")
        if self.cordon:
            spec["unschedulable"] = True
        else:
            spec.pop("unschedulable", None)
        return Replace(obj=KubeObject(body))


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetHpaBounds:
    kind: ClassVar[str] = "set_hpa_bounds"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"HorizontalPodAutoscaler"})
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    min_replicas: int | None = None
    max_replicas: int | None = None

    def __post_init__(self) -> None:
        if self.min_replicas is None and self.max_replicas is None:
            raise ValueError("set_hpa_bounds changes nothing")
        if self.min_replicas is not None and self.min_replicas < 1:
            raise ValueError("minReplicas must be ≥ 1")
        if (
            self.min_replicas is not None
            and self.max_replicas is not None
            and self.max_replicas < self.min_replicas
        ):
            raise ValueError("maxReplicas must be ≥ minReplicas")

    @property
    def risk(self) -> Risk:
        return Risk.LOW

    def describe(self) -> str:
        parts = []
        if self.min_replicas is not None:
            parts.append(f"min {self.min_replicas}")
        if self.max_replicas is not None:
            parts.append(f"max {self.max_replicas}")
        return f"Set bounds of {self.target}: {', '.join(parts)}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        spec = child(body, "spec")
        if self.min_replicas is not None:
            spec["minReplicas"] = self.min_replicas
        if self.max_replicas is not None:
            spec["maxReplicas"] = self.max_replicas
        return Replace(obj=KubeObject(body))


#: Kinds a free-form merge patch may touch, and the top-level fields it may change there.
MERGE_PATCH_ALLOWLIST: Mapping[str, frozenset[str]] = {
    "Deployment": frozenset({"spec"}),
    "StatefulSet": frozenset({"spec"}),
    "Service": frozenset({"spec"}),
    "ConfigMap": frozenset({"data"}),
    "HorizontalPodAutoscaler": frozenset({"spec"}),
    # Restoring a namespace's quota to what it was; raising it is as risky as any merge patch.
    "ResourceQuota": frozenset({"spec"}),
}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class MergePatch:
    """A JSON merge patch on an allowlisted kind and field — how a fix a language model
    proposes gets in. Always high risk: a human reads it before it runs."""

    kind: ClassVar[str] = "merge_patch"
    target_kinds: ClassVar[frozenset[str]] = frozenset(MERGE_PATCH_ALLOWLIST)
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    patch: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""

    def __post_init__(self) -> None:
        if not self.patch:
            raise ValueError("merge_patch changes nothing")

    @property
    def risk(self) -> Risk:
        return Risk.HIGH

    def describe(self) -> str:
        keys = ", ".join(sorted(_paths(self.patch)))
        return f"Merge-patch {self.target} ({keys})"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        allowed = MERGE_PATCH_ALLOWLIST.get(self.target.kind, frozenset())
        touched = set(self.patch) - allowed
        if touched:
            raise Inadmissible(
                f"merge patch on {self.target.kind} may only change {sorted(allowed)}, "
                f"not {sorted(touched)}"
            )
        body: JsonObject = merge_patch(mutable_copy(live), dict(self.patch))
        if body.get("kind") != live.kind or (body.get("metadata") or {}).get("name") != live.name:
            raise Invalid("merge patch may not change the object's kind or name")
        return Replace(obj=KubeObject(body))


def _paths(patch: Mapping[str, Any], prefix: str = "", depth: int = 3) -> list[str]:
    paths: list[str] = []
    for key, value in patch.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value and depth > 1:
            paths.extend(_paths(value, path, depth - 1))
        else:
            paths.append(path)
    return paths
