"""What every fault shares: the `Fault` base class and the context an injector writes through
(the values it produces are in `lab.faults.model`).

A fault models what broke a real cluster. Where the real fault is a spec change (somebody
scaled, edited, rolled out), the injector makes that change through the Kubernetes API with
field manager `kubectl`, exactly as an operator's command would, so the change journal, the
diagnosis and any fix meet it the way they would in production. Where it is not (a database
user lost its roles, the network drops packets, chaos tooling swapped a pod's image), it acts
on the data plane or on pods the way that tooling does. Symptoms are never injected: they
follow from the cluster's state through the simulator.

Each injection records its ground truth (root-cause services, category, whether an undoable
Kubernetes action can fix it) and the workloads the namespace had before (the baseline the
mitigation oracle holds any fix to).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from agents.model import Category, JsonObject
from lab.apps import AppBundle
from lab.faults.errors import BadParameter, FaultError, InjectionFailed
from lab.faults.model import (
    DURATION,
    Baseline,
    GroundTruth,
    Injection,
    Param,
    ParamValue,
    SavedObject,
)
from lab.kube.errors import ApiError
from lab.kube.runtime import ClusterAPI, PatchType

if TYPE_CHECKING:
    from lab.sim.world import LabWorld

logger = logging.getLogger(__name__)

#: Faults model an operator's mistake: their writes carry kubectl's field manager.
FIELD_MANAGER = "kubectl"
#: The lab's own repairs (`Fault.recover`) are attributed to the lab, not to an operator.
RECOVER_MANAGER = "lab-faults"

#: Metadata a saved object must not carry back into a replace.
_VOLATILE_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
)


@dataclass(slots=True)
class FaultContext:
    """What an injector works with; it records every change it makes (and what it replaced)."""

    world: LabWorld
    bundle: AppBundle
    target: str
    params: dict[str, ParamValue]
    now: datetime
    changes: list[str] = field(default_factory=list)
    saved: list[SavedObject] = field(default_factory=list)
    expires_at: datetime | None = None

    @property
    def namespace(self) -> str:
        return self.bundle.namespace

    @property
    def api(self) -> ClusterAPI:
        return self.world.api

    def get(self, kind: str, name: str) -> JsonObject:
        obj = self.api.get(kind, self.namespace, name)
        if obj is None:
            raise BadParameter(f"{kind} {self.namespace}/{name} does not exist")
        return obj

    def _save(self, kind: str, name: str, before: JsonObject | None) -> None:
        if any(s.kind == kind and s.name == name for s in self.saved):
            return  # the first snapshot is the one to go back to
        self.saved.append(
            SavedObject(
                kind=kind,
                namespace=self.namespace,
                name=name,
                before=clean(before) if before is not None else None,
            )
        )

    def patch(
        self,
        kind: str,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType,
        change: str,
        field_manager: str = FIELD_MANAGER,
    ) -> JsonObject:
        """Patch as `kubectl patch/set/scale/edit` would; `change` is the line to report."""
        before = self.get(kind, name)
        self._save(kind, name, before)
        try:
            result = self.api.patch(
                kind,
                self.namespace,
                name,
                patch,
                patch_type=patch_type,
                field_manager=field_manager,
            )
        except ApiError as e:
            raise InjectionFailed(f"{kind}/{name}: {e.message}") from e
        self.changes.append(change)
        return result

    def create(self, obj: JsonObject, *, change: str) -> JsonObject:
        meta = obj.setdefault("metadata", {})
        meta["namespace"] = self.namespace
        try:
            result = self.api.create(obj, field_manager=FIELD_MANAGER)
        except ApiError as e:
            raise InjectionFailed(f"{obj.get('kind')}/{meta.get('name')}: {e.message}") from e
        self._save(str(obj["kind"]), str(meta["name"]), None)
        self.changes.append(change)
        return result


def targets(by_app: dict[str, str]) -> Mapping[str, str]:
    """A fault's default target per app (read-only: it is shared by every injection)."""
    return MappingProxyType(by_app)


def clean(obj: JsonObject) -> JsonObject:
    """A copy without server-set metadata and status: what a restore writes back."""
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = dict(out.get("metadata") or {})
    for key in _VOLATILE_METADATA:
        meta.pop(key, None)
    out["metadata"] = meta
    return out


def baseline(api: ClusterAPI, namespace: str, at: datetime) -> Baseline:
    workloads: dict[str, int] = {}
    for kind in ("Deployment", "StatefulSet"):
        for obj in api.list(kind, namespace):
            replicas = (obj.get("spec") or {}).get("replicas", 1)
            workloads[f"{kind}/{obj['metadata']['name']}"] = int(replicas)
    return Baseline(namespace=namespace, workloads=workloads, recorded_at=at)


class Fault(ABC):
    """A kind of failure. Subclasses set the class attributes and implement `apply`."""

    id: ClassVar[str]
    description: ClassVar[str]  # one line
    category: ClassVar[Category | None]
    undoable_fix: ClassVar[bool] = True
    params: ClassVar[tuple[Param, ...]] = ()
    #: app → the target used when none is given; its keys are the apps the fault supports.
    default_targets: ClassVar[Mapping[str, str]]

    @property
    def apps(self) -> tuple[str, ...]:
        return tuple(self.default_targets)

    @property
    def time_bounded(self) -> bool:
        return any(p.name == DURATION.name for p in self.params)

    # ------------------------------------------------------------------ inject

    def inject(
        self,
        world: LabWorld,
        *,
        app: str | None = None,
        target: str | None = None,
        params: Mapping[str, object] | None = None,
    ) -> Injection:
        """Break the running lab. Raises `BadParameter` for an app, target or parameter the
        fault cannot use, `InjectionFailed` when the cluster refuses the change."""
        bundle = self._bundle(world, app, target)
        target = target or self.default_targets[bundle.name]
        if target not in bundle.model.services:
            raise BadParameter(
                f"{self.id}: {bundle.namespace} has no service {target!r}; "
                f"services: {', '.join(sorted(bundle.model.services))}"
            )
        ctx = FaultContext(
            world=world,
            bundle=bundle,
            target=target,
            params=self._parse(params or {}),
            now=world.clock.now(),
        )
        before = baseline(world.api, bundle.namespace, ctx.now)
        try:
            self.apply(ctx)
        except FaultError:
            # An injection that fails half-way changes nothing: put back what it did change.
            for saved in reversed(ctx.saved):
                restore_saved(world.api, saved)
            raise
        injection = Injection(
            fault_id=self.id,
            app=bundle.name,
            namespace=bundle.namespace,
            target=ctx.target,
            params=dict(ctx.params),
            truth=self.truth(ctx),
            baseline=before,
            injected_at=ctx.now,
            changes=tuple(ctx.changes),
            saved=tuple(ctx.saved),
            expires_at=ctx.expires_at,
        )
        logger.info("fault injected: %s: %s", injection.summary(), "; ".join(ctx.changes))
        return injection

    def _bundle(self, world: LabWorld, app: str | None, target: str | None) -> AppBundle:
        running = {b.name: b for b in world.bundles}
        supported = [name for name in running if name in self.default_targets]
        if app is not None:
            if app not in running:
                raise BadParameter(
                    f"{self.id}: app {app!r} is not running; running: {', '.join(running)}"
                )
            if app not in self.default_targets:
                raise BadParameter(
                    f"{self.id}: does not apply to {app}; it applies to "
                    f"{', '.join(self.default_targets)}"
                )
            return running[app]
        if not supported:
            raise BadParameter(
                f"{self.id}: applies to {', '.join(self.default_targets)}, none of which is running"
            )
        if target is not None:
            for name in supported:
                if target in running[name].model.services:
                    return running[name]
        return running[supported[0]]

    def _parse(self, raw: Mapping[str, object]) -> dict[str, ParamValue]:
        known = {p.name: p for p in self.params}
        out: dict[str, ParamValue] = {}
        for name, value in raw.items():
            spec = known.get(name)
            if spec is None:
                names = ", ".join(known) or "none"
                raise BadParameter(f"{self.id}: unknown parameter {name!r} (parameters: {names})")
            out[name] = spec.parse(value)
        return out

    @abstractmethod
    def apply(self, ctx: FaultContext) -> None:
        """Make the change; record it through `ctx` (its `patch`/`create` do)."""

    def truth(self, ctx: FaultContext) -> GroundTruth:
        assert self.category is not None
        return GroundTruth(
            namespace=ctx.namespace,
            root_causes=(ctx.target,),
            category=self.category,
            undoable_fix=self.undoable_fix,
        )

    # ------------------------------------------------------------------ oracle and repair

    def blockers(self, world: LabWorld, injection: Injection) -> list[str]:
        """Fault-specific reasons the fault still holds, beyond what cluster state and SLOs
        show (a network condition still in force). Empty by default: any correct fix of a
        spec fault is judged by its effects, never by whether the faulty value is still
        there."""
        return []

    def recover(self, world: LabWorld, injection: Injection) -> tuple[str, ...]:
        """Put back what the injector changed (the lab's reset, not a mitigation under test):
        saved objects get their spec or data back, created ones are deleted."""
        done: list[str] = []
        for saved in reversed(injection.saved):
            line = restore_saved(world.api, saved)
            if line:
                done.append(line)
        return tuple(done)


def restore_saved(api: ClusterAPI, saved: SavedObject) -> str:
    """Re-apply one saved object; returns what was done ('' when there was nothing to do)."""
    ref = f"{saved.kind}/{saved.name}"
    current = api.get(saved.kind, saved.namespace, saved.name)
    if saved.before is None:
        if current is None:
            return ""
        api.delete(saved.kind, saved.namespace, saved.name)
        return f"{ref}: deleted"
    restored = clean(saved.before)
    if current is None:
        api.create(restored, field_manager=RECOVER_MANAGER)
        return f"{ref}: recreated"
    restored["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    api.replace(restored, field_manager=RECOVER_MANAGER)
    return f"{ref}: restored"
