"""The API server's semantics, in-process: the one implementation behind both the HTTP handlers
and `ClusterAPI`.

Every write goes through the same pipeline as on the real server: decode (typed fields,
unknown fields dropped), metadata rules (uid, creationTimestamp, generation bumped on spec
changes only, resourceVersion preconditions), defaulting, validation (422), admission (quota:
403), managedFields for the field manager, then commit, unless the request is a dry run, in
which case the answer is computed and nothing changes. Controllers write through it as well
(`internal=True` skips decoding of objects they built themselves).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from agents.model import JsonObject
from lab.clock import LabClock
from lab.kube import defaults, managed, schema, validation
from lab.kube.deletion import Deleted, delete_object
from lab.kube.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    Invalid,
    MethodNotAllowed,
    NotFound,
    already_exists,
    conflict,
    not_found,
)
from lab.kube.events import EventRecorder
from lab.kube.ids import Ids
from lab.kube.jsonutil import copy_obj, rfc3339
from lab.kube.listing import ListPage, list_page
from lab.kube.patch import (
    PatchApplyError,
    PatchFormatError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from lab.kube.resources import ResourceType, by_kind
from lab.kube.selectors import (
    EVERYTHING,
    FieldSelector,
    LabelSelector,
    parse_label_selector,
)
from lab.kube.store import Store, Stored

logger = logging.getLogger(__name__)

StoredList = list[Stored]
Warnings = list[str]
ObjectList = list[JsonObject]

#: Metadata only the server sets; a client's values are ignored.
SYSTEM_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "selfLink",
)


class Admission(Protocol):
    """An admission check run on every create and update before commit (quota)."""

    def admit(self, rt: ResourceType, obj: JsonObject, old: JsonObject | None) -> None: ...


def resource_for(kind: str) -> ResourceType:
    rt = by_kind(kind)
    if rt is None:
        raise NotFound(f"the server could not find the requested resource (kind {kind})")
    return rt


class SharedView:
    """`ClusterView` without copies, for in-process readers that never write into what they
    read (the simulator, the bench's mitigation oracle). The store never changes an object in
    place — every write stores a new dict — so an object read here stays as it was read while
    others write; what such a reader must not do is change it. Copying every object on every
    read was a tenth of the bench's time."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, kind: str, namespace: str | None, name: str) -> JsonObject | None:
        stored = self._store.get(kind, namespace or "", name)
        return stored.obj if stored is not None else None

    def list(self, kind: str, namespace: str | None = None, label_selector: str = "") -> ObjectList:
        selector = parse_label_selector(label_selector) if label_selector else EVERYTHING
        with self._store.lock:
            items = self._store.items(kind, namespace)
            return [s.obj for s in items if selector.matches(s.obj["metadata"].get("labels"))]


class KubeApi:
    def __init__(self, *, store: Store, clock: LabClock, ids: Ids) -> None:
        self.store = store
        self.clock = clock
        self.ids = ids
        #: Reads without copies, for in-process readers that never mutate (`SharedView`).
        self.shared = SharedView(store)
        self.admission: list[Admission] = []
        self.write_hooks: list[Callable[[], None]] = []
        self.delete_hooks: list[Callable[[ResourceType, JsonObject], None]] = []
        self.events = EventRecorder(self)

    def now(self) -> str:
        return rfc3339(self.clock.now())

    # ================================================================== ClusterView / API

    def get(self, kind: str, namespace: str | None, name: str) -> JsonObject | None:
        stored = self.store.get(kind, namespace or "", name)
        return copy_obj(stored.obj) if stored is not None else None

    def list(self, kind: str, namespace: str | None = None, label_selector: str = "") -> ObjectList:
        selector = parse_label_selector(label_selector) if label_selector else EVERYTHING
        with self.store.lock:
            items = self.store.items(kind, namespace)
            return [
                copy_obj(s.obj) for s in items if selector.matches(s.obj["metadata"].get("labels"))
            ]

    def create(self, obj: JsonObject, *, field_manager: str, dry_run: bool = False) -> JsonObject:
        rt = resource_for(str(obj.get("kind", "")))
        namespace = (obj.get("metadata") or {}).get("namespace") or (
            "default" if rt.namespaced else ""
        )
        created, _ = self.create_object(rt, namespace, obj, manager=field_manager, dry_run=dry_run)
        return created

    def replace(self, obj: JsonObject, *, field_manager: str, dry_run: bool = False) -> JsonObject:
        rt = resource_for(str(obj.get("kind", "")))
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or ("default" if rt.namespaced else "")
        return self.update_object(
            rt, namespace, str(meta.get("name", "")), obj, manager=field_manager, dry_run=dry_run
        )

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str,
        field_manager: str,
        dry_run: bool = False,
        subresource: str = "",
    ) -> JsonObject:
        """Patch an object; `subresource="status"` patches its status (beyond the
        `ClusterAPI` protocol: how a fault sets a node NotReady, as a kubelet would)."""
        return self.patch_object(
            resource_for(kind),
            namespace or "",
            name,
            patch,
            patch_type=patch_type,
            manager=field_manager,
            dry_run=dry_run,
            subresource=subresource,
        )

    def delete(
        self, kind: str, namespace: str | None, name: str, *, dry_run: bool = False
    ) -> JsonObject | None:
        """Delete an object. Returns it while it still exists (finalizers, a pod's graceful
        termination), None once it is gone; a dry run returns what would be deleted."""
        result = self.delete_object(resource_for(kind), namespace or "", name, dry_run=dry_run)
        return result.obj if dry_run or not result.gone else None

    def record_event(
        self,
        *,
        involved: JsonObject,
        reason: str,
        message: str,
        type: str = "Normal",
        component: str = "lab",
        field_path: str = "",
    ) -> None:
        self.events.record(
            involved=involved,
            reason=reason,
            message=message,
            type=type,
            component=component,
            field_path=field_path,
        )

    # ================================================================== reads

    def read(self, rt: ResourceType, namespace: str, name: str) -> Stored:
        stored = self.store.get(rt.stored_kind, namespace, name)
        if stored is None:
            raise not_found(rt.plural, rt.group, name)
        return stored

    def list_page(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector = EVERYTHING,
        fields: FieldSelector | None = None,
        limit: int = 0,
        continue_token: str = "",
    ) -> ListPage:
        return list_page(
            self.store,
            rt,
            namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_token=continue_token,
        )

    # ================================================================== create

    def _decode(
        self, rt: ResourceType, body: Any, *, internal: bool, strict: bool
    ) -> tuple[JsonObject, Warnings]:
        if not isinstance(body, dict):
            raise BadRequest(f"the body of the request must be a JSON object ({rt.kind})")
        if rt.read_only:
            raise MethodNotAllowed(
                "the server does not allow this method on the requested resource"
            )
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if kind not in (None, "", rt.kind):
            raise BadRequest(
                f'{kind} in version "{api_version}" cannot be handled as a {rt.kind}: '
                f"the kind in the body does not match the resource"
            )
        if api_version not in (None, "", rt.api_version):
            raise BadRequest(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({rt.api_version})"
            )
        if internal:
            obj, warnings = copy_obj(body), []
        else:
            decoded = schema.decode(body, rt.model, kind=rt.kind, version=rt.version, strict=strict)
            obj, warnings = decoded.obj, [f'unknown field "{f}"' for f in decoded.unknown_fields]
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        obj.setdefault("metadata", {})
        return obj, warnings

    def _check_namespace(self, rt: ResourceType, namespace: str, obj: JsonObject) -> None:
        meta = obj["metadata"]
        if not rt.namespaced:
            meta.pop("namespace", None)
            return
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        meta["namespace"] = namespace

    def _require_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get("Namespace", "", namespace)
        if ns is None:
            raise not_found("namespaces", "", namespace)
        if ns.obj["metadata"].get("deletionTimestamp") and rt.kind != "Event":
            raise Forbidden(
                f'{rt.plural} "{name}" is forbidden: unable to create new content in namespace '
                f"{namespace} because it is being terminated",
                name=name,
                group=rt.group,
                kind=rt.plural,
            )

    def create_object(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        *,
        manager: str,
        dry_run: bool = False,
        strict: bool = False,
        internal: bool = False,
    ) -> tuple[JsonObject, Warnings]:
        obj, warnings = self._decode(rt, body, internal=internal, strict=strict)
        self._check_namespace(rt, namespace, obj)
        meta = obj["metadata"]
        with self.store.lock:
            name = meta.get("name") or ""
            self._require_namespace(rt, namespace, name or meta.get("generateName", ""))
            if not name and meta.get("generateName"):
                name = meta["generateName"] + self.ids.suffix()
                while self.store.get(rt.kind, namespace, name) is not None:
                    name = meta["generateName"] + self.ids.suffix()
                meta["name"] = name
            if name and self.store.get(rt.kind, namespace, name) is not None:
                raise already_exists(rt.plural, rt.group, name)
            for key in SYSTEM_METADATA:
                meta.pop(key, None)
            meta["uid"] = self.ids.uid()
            meta["creationTimestamp"] = self.now()
            if rt.has_generation:
                meta["generation"] = 1
            if (
                "status" in rt.subresources
                and rt.kind not in ("Node", "Namespace")
                and not internal
            ):
                obj.pop("status", None)
            if "status" in rt.subresources:
                # A Go struct field: the real server always shows at least `status: {}`.
                obj.setdefault("status", {})
            from lab.kube.services import ServiceAllocations

            allocations = ServiceAllocations(self.ids, self.store)
            try:
                defaults.apply(rt.kind, obj, allocations)
                allocations.check(rt, obj)
                validation.validate(rt, obj)
                for plugin in self.admission:
                    plugin.admit(rt, obj, None)
            except ApiError:
                allocations.release()
                raise
            meta["managedFields"] = managed.update(
                None,
                obj,
                manager=manager,
                operation="Update",
                subresource="",
                api_version=rt.api_version,
                time=meta["creationTimestamp"],
            )
            if dry_run:
                allocations.release()
                return copy_obj(obj), warnings
            self.store.put(rt.kind, obj, None)
            result = copy_obj(obj)
        self.wrote()
        return result, warnings

    # ================================================================== update

    def update_object(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        manager: str,
        subresource: str = "",
        dry_run: bool = False,
        strict: bool = False,
        internal: bool = False,
    ) -> JsonObject:
        obj, _ = self._decode(rt, body, internal=internal, strict=strict)
        meta = obj["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise BadRequest(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        meta["name"] = name
        self._check_namespace(rt, namespace, obj)
        with self.store.lock:
            old = self.read(rt, namespace, name).obj
            wanted = meta.get("resourceVersion")
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name)
            return self.commit_update(
                rt,
                old,
                obj,
                manager=manager,
                subresource=subresource,
                dry_run=dry_run,
                internal=internal,
            )

    def commit_update(
        self,
        rt: ResourceType,
        old: JsonObject,
        new: JsonObject,
        *,
        manager: str,
        subresource: str,
        dry_run: bool,
        internal: bool,
        operation: str = "Update",
    ) -> JsonObject:
        old_meta = old["metadata"]
        if subresource == "status":
            new = {**copy_obj(old), "status": new.get("status", {})}
            defaults.zero_status(rt.kind, new)
        else:
            meta = new["metadata"]
            for key in SYSTEM_METADATA:
                if key in old_meta:
                    meta[key] = old_meta[key]
                else:
                    meta.pop(key, None)
            if "status" in rt.subresources and subresource != "*":
                if "status" in old:
                    new["status"] = copy_obj(old["status"])
                else:
                    new.pop("status", None)
            if rt.kind == "Service":
                _keep_service_allocations(old, new)
            if rt.kind == "Namespace" and subresource != "finalize":
                new["spec"] = copy_obj(old.get("spec", {}))
            defaults.apply(rt.kind, new, _NoAllocations())
            if rt.has_generation and new.get("spec") != old.get("spec"):
                new["metadata"]["generation"] = int(old_meta.get("generation", 1)) + 1
        if not internal:
            validation.validate(rt, new, old)
            for plugin in self.admission:
                plugin.admit(rt, new, old)
        if _same(old, new):
            return copy_obj(old)
        new["metadata"]["managedFields"] = managed.update(
            old,
            new,
            manager=manager,
            operation=operation,
            subresource="" if subresource == "*" else subresource,
            api_version=rt.api_version,
            time=self.now(),
        )
        if dry_run:
            return copy_obj(new)
        finished = (
            bool(new["metadata"].get("deletionTimestamp"))
            and not new["metadata"].get("finalizers")
            and not (rt.kind == "Namespace" and (new.get("spec") or {}).get("finalizers"))
        )
        self.store.put(rt.kind, new, old)
        result = copy_obj(new)
        if finished:
            self.remove(rt, new)
        self.wrote()
        return result

    # ================================================================== patch

    def patch_object(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch: Any,
        *,
        patch_type: str,
        manager: str,
        subresource: str = "",
        dry_run: bool = False,
        internal: bool = False,
    ) -> JsonObject:
        if rt.read_only:
            raise MethodNotAllowed(
                "the server does not allow this method on the requested resource"
            )
        with self.store.lock:
            stored = self.store.get(rt.kind, namespace, name)
            if stored is None:
                if patch_type == "apply":
                    if not isinstance(patch, dict):
                        raise BadRequest("an apply patch must be an object")
                    body = {**patch, "metadata": {**(patch.get("metadata") or {}), "name": name}}
                    created, _ = self.create_object(
                        rt, namespace, body, manager=manager, dry_run=dry_run
                    )
                    return created
                raise not_found(rt.plural, rt.group, name)
            old = stored.obj
            patched = apply_patch(rt, old, patch, patch_type)
            obj, _ = self._decode(rt, patched, internal=internal, strict=False)
            meta = obj["metadata"]
            if meta.get("name") != name or (rt.namespaced and meta.get("namespace") != namespace):
                raise Invalid(
                    f'{rt.kind} "{name}" is invalid: metadata.name: Invalid value: '
                    f'"{meta.get("name")}": field is immutable',
                    name=name,
                    group=rt.group,
                    kind=rt.kind,
                )
            if meta.get("resourceVersion") != old["metadata"]["resourceVersion"] and meta.get(
                "resourceVersion"
            ):
                raise conflict(rt.plural, rt.group, name)
            return self.commit_update(
                rt,
                old,
                obj,
                manager=manager,
                subresource=subresource,
                dry_run=dry_run,
                internal=internal,
                operation="Apply" if patch_type == "apply" else "Update",
            )

    # ================================================================== delete

    def delete_object(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: JsonObject | None = None,
        grace_period: int | None = None,
        dry_run: bool = False,
    ) -> Deleted:
        return delete_object(
            self,
            rt,
            namespace,
            name,
            propagation=propagation,
            preconditions=preconditions,
            grace_period=grace_period,
            dry_run=dry_run,
        )

    def remove(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        """Remove an object from the store now (deletion completed) and run delete hooks."""
        meta = obj["metadata"]
        final = self.store.remove(rt.kind, meta.get("namespace", ""), meta["name"])
        for hook in self.delete_hooks:
            hook(rt, obj)
        return copy_obj(final if final is not None else obj)

    # ================================================================== helpers

    def wrote(self) -> None:
        """Tell the driver something changed (it reconciles promptly)."""
        for hook in self.write_hooks:
            hook()


class _NoAllocations:
    def cluster_ip(self) -> str:
        return ""

    def node_port(self) -> int:
        return 0


def _keep_service_allocations(old: JsonObject, new: JsonObject) -> None:
    """A Service update that leaves out clusterIP or nodePort keeps the allocated ones."""
    old_spec, new_spec = old.get("spec") or {}, new.setdefault("spec", {})
    for key in ("clusterIP", "clusterIPs"):
        if not new_spec.get(key) and old_spec.get(key):
            new_spec[key] = old_spec[key]
    old_ports = {p.get("port"): p.get("nodePort") for p in old_spec.get("ports") or []}
    for port in new_spec.get("ports") or []:
        if not port.get("nodePort") and old_ports.get(port.get("port")):
            port["nodePort"] = old_ports[port.get("port")]


def _same(old: JsonObject, new: JsonObject) -> bool:
    """Whether a write changes nothing (then the real server does not write at all)."""

    def strip(obj: JsonObject) -> JsonObject:
        meta = {
            k: v
            for k, v in obj["metadata"].items()
            if k not in ("resourceVersion", "managedFields")
        }
        return {**obj, "metadata": meta}

    return strip(old) == strip(new)


def apply_patch(rt: ResourceType, old: JsonObject, patch: Any, patch_type: str) -> Any:
    try:
        if patch_type == "json":
            return json_patch(old, patch)
        if patch_type == "merge":
            if not isinstance(patch, dict):
                raise PatchFormatError("a merge patch must be a JSON object")
            return merge_patch(old, patch)
        if patch_type in ("strategic", "apply"):
            return strategic_merge_patch(old, patch)
    except PatchFormatError as e:
        raise BadRequest(str(e)) from None
    except PatchApplyError as e:
        raise Invalid(
            f"the server rejected our request due to an error in our request: {e}",
            name=old["metadata"]["name"],
            group=rt.group,
            kind=rt.kind,
        ) from None
    except RecursionError:
        raise BadRequest("the patch is nested too deeply") from None
    raise BadRequest(f"unsupported patch type {patch_type!r}")
