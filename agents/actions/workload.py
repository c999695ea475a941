"""Actions on workloads (Deployments, StatefulSets): replicas, images, revisions, restarts,
env, resources and scheduling constraints. Each rewrites the workload's spec; the controllers
converge the pods."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agents.actions.base import Replace, Write, child, container, mutable_copy, pod_spec, register
from agents.errors import NotFound
from agents.model import KubeObject, ObjectRef, Risk
from agents.ports import ClusterReader

WORKLOADS = frozenset({"Deployment", "StatefulSet"})
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
REVISION = "deployment.kubernetes.io/revision"


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleWorkload:
    kind: ClassVar[str] = "scale"
    target_kinds: ClassVar[frozenset[str]] = WORKLOADS
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    replicas: int
    from_replicas: int | None = None  # what the planner saw; shown to the approver

    def __post_init__(self) -> None:
        if self.replicas < 0:
            raise ValueError("replicas must be ≥ 0")

    @property
    def risk(self) -> Risk:
        if self.replicas == 0:
            return Risk.HIGH
        if self.from_replicas is not None and self.replicas < self.from_replicas:
            return Risk.MEDIUM
        return Risk.LOW

    def describe(self) -> str:
        start = f" from {self.from_replicas}" if self.from_replicas is not None else ""
        return f"Scale {self.target}{start} to {self.replicas}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        child(body, "spec")["replicas"] = self.replicas
        return Replace(obj=KubeObject(body))


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetImage:
    kind: ClassVar[str] = "set_image"
    target_kinds: ClassVar[frozenset[str]] = WORKLOADS
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    container: str
    image: str

    @property
    def risk(self) -> Risk:
        return Risk.MEDIUM

    def describe(self) -> str:
        return f"Set image of container {self.container} in {self.target} to {self.image}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        container(body, self.container)["image"] = self.image
        return Replace(obj=KubeObject(body))


def _owned_by(obj: KubeObject, owner: KubeObject) -> bool:
    uid = owner.metadata.get("uid")
    refs = obj.metadata.get("ownerReferences") or []
    return any(isinstance(r, dict) and r.get("uid") == uid for r in refs)


def _revision(obj: KubeObject) -> int:
    annotations = obj.metadata.get("annotations") or {}
    try:
        return int(annotations.get(REVISION, "0"))
    except ValueError:
        return 0


def _template_without_hash(rs: KubeObject) -> dict[str, Any]:
    template = dict((rs.body.get("spec") or {}).get("template") or {})
    meta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != "pod-template-hash"}
    meta["labels"] = labels
    template["metadata"] = meta
    return template


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RollbackWorkload:
    """Put a Deployment's pod template back to an earlier revision (`kubectl rollout undo`)."""

    kind: ClassVar[str] = "rollback"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"Deployment"})
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    revision: int | None = None  # None: the revision before the current one

    @property
    def risk(self) -> Risk:
        return Risk.LOW

    def describe(self) -> str:
        which = f"revision {self.revision}" if self.revision else "the previous revision"
        return f"Roll back {self.target} to {which}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        selector = (live.body.get("spec") or {}).get("selector", {}).get("matchLabels") or {}
        label_selector = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        sets = [
            rs
            for rs in reader.list_objects(
                api_version="apps/v1",
                kind="ReplicaSet",
                namespace=live.namespace,
                label_selector=label_selector,
            )
            if _owned_by(rs, live)
        ]
        current = _revision(live)
        by_revision = {_revision(rs): rs for rs in sets}
        if self.revision is not None:
            chosen = by_revision.get(self.revision)
        else:
            older = [r for r in by_revision if 0 < r < current]
            chosen = by_revision[max(older)] if older else None
        if chosen is None:
            known = ", ".join(str(r) for r in sorted(by_revision)) or "none"
            raise NotFound(f"{self.target}: no revision to roll back to (revisions: {known})")
        body = mutable_copy(live)
        child(body, "spec")["template"] = _template_without_hash(chosen)
        return Replace(obj=KubeObject(body))


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutRestart:
    """Restart every pod of a workload by stamping its template (`kubectl rollout restart`);
    how pods pick up a corrected ConfigMap or Secret."""

    kind: ClassVar[str] = "rollout_restart"
    target_kinds: ClassVar[frozenset[str]] = WORKLOADS
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    stamp: str  # the planner's clock, ISO 8601: lab time in the lab, wall time in production

    @property
    def risk(self) -> Risk:
        return Risk.LOW

    def describe(self) -> str:
        return f"Restart the pods of {self.target} (rolling)"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        annotations = child(body, "spec", "template", "metadata", "annotations")
        annotations[RESTARTED_AT] = self.stamp
        return Replace(obj=KubeObject(body))


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetContainerEnv:
    """Set (value) or unset (None) environment variables of one container."""

    kind: ClassVar[str] = "set_env"
    target_kinds: ClassVar[frozenset[str]] = WORKLOADS
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    container: str
    env: Mapping[str, str | None]

    @property
    def risk(self) -> Risk:
        return Risk.MEDIUM

    def describe(self) -> str:
        changes = ", ".join(
            f"unset {k}" if v is None else f"{k}={v}" for k, v in sorted(self.env.items())
        )
        return f"Set env of container {self.container} in {self.target}: {changes}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        spec = container(body, self.container)
        env: list[dict[str, Any]] = [e for e in spec.get("env") or [] if isinstance(e, dict)]
        for name, value in sorted(self.env.items()):
            position = next((i for i, e in enumerate(env) if e.get("name") == name), None)
            if value is None:
                if position is not None:
                    del env[position]
            elif position is None:
                env.append({"name": name, "value": value})
            else:
                # A literal value replaces a valueFrom reference of the same name.
                env[position] = {"name": name, "value": value}
        spec["env"] = env
        return Replace(obj=KubeObject(body))


_QUANTITY_KEYS = frozenset({"cpu", "memory", "ephemeral-storage"})


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetResources:
    """Set a container's resource requests and/or limits (values are Kubernetes quantities)."""

    kind: ClassVar[str] = "set_resources"
    target_kinds: ClassVar[frozenset[str]] = WORKLOADS
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    container: str
    requests: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = (set(self.requests) | set(self.limits)) - _QUANTITY_KEYS
        if unknown:
            raise ValueError(f"unknown resources {sorted(unknown)}")

    @property
    def risk(self) -> Risk:
        return Risk.LOW if not self.requests else Risk.MEDIUM

    def describe(self) -> str:
        parts = [f"requests {k}={v}" for k, v in sorted(self.requests.items())]
        parts += [f"limits {k}={v}" for k, v in sorted(self.limits.items())]
        return f"Set resources of container {self.container} in {self.target}: {', '.join(parts)}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        resources = container(body, self.container).setdefault("resources", {})
        if self.requests:
            resources.setdefault("requests", {}).update(self.requests)
        if self.limits:
            resources.setdefault("limits", {}).update(self.limits)
        return Replace(obj=KubeObject(body))


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetScheduling:
    """Replace or remove scheduling constraints of a workload's pods. A field left None is not
    touched; an empty mapping/tuple removes the constraint."""

    kind: ClassVar[str] = "set_scheduling"
    target_kinds: ClassVar[frozenset[str]] = WORKLOADS
    has_inverse: ClassVar[bool] = True

    target: ObjectRef
    node_selector: Mapping[str, str] | None = None
    tolerations: tuple[Mapping[str, Any], ...] | None = None
    affinity: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.node_selector is None and self.tolerations is None and self.affinity is None:
            raise ValueError("set_scheduling changes nothing")

    @property
    def risk(self) -> Risk:
        return Risk.MEDIUM

    def describe(self) -> str:
        parts = []
        if self.node_selector is not None:
            parts.append(
                f"nodeSelector {dict(self.node_selector)}"
                if self.node_selector
                else "no nodeSelector"
            )
        if self.tolerations is not None:
            parts.append(f"{len(self.tolerations)} toleration(s)")
        if self.affinity is not None:
            parts.append("affinity replaced" if self.affinity else "no affinity")
        return f"Set scheduling of {self.target}: {', '.join(parts)}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        body = mutable_copy(live)
        spec = pod_spec(body)
        for key, value in (
            ("nodeSelector", self.node_selector),
            ("tolerations", self.tolerations),
            ("affinity", self.affinity),
        ):
            if value is None:
                continue
            if value:
                spec[key] = [dict(v) for v in value] if isinstance(value, tuple) else dict(value)
            else:
                spec.pop(key, None)
        return Replace(obj=KubeObject(body))
