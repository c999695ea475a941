"""Deletion: preconditions, finalizers, propagation policies and graceful pod termination.

As on the real server, an object with finalizers (or deleted in the foreground, which adds
`foregroundDeletion`) only gets a deletionTimestamp and stays until they are removed; a pod
bound to a node gets a grace period and the kubelet finishes it; `Orphan` strips the
ownerReferences of dependents; `Background` deletes at once and lets the garbage collector
follow. A dry run answers with what would be deleted and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agents.model import JsonObject
from lab.kube.errors import BadRequest, Conflict, MethodNotAllowed, conflict
from lab.kube.jsonutil import copy_obj
from lab.kube.resources import ResourceType

if TYPE_CHECKING:
    from lab.kube.api import KubeApi


@dataclass(frozen=True, slots=True)
class Deleted:
    obj: JsonObject
    gone: bool  # False while finalizers or a grace period keep it around


def delete_object(
    api: KubeApi,
    rt: ResourceType,
    namespace: str,
    name: str,
    *,
    propagation: str | None = None,
    preconditions: JsonObject | None = None,
    grace_period: int | None = None,
    dry_run: bool = False,
) -> Deleted:
    if rt.read_only:
        raise MethodNotAllowed("the server does not allow this method on the requested resource")
    if propagation not in (None, "", "Orphan", "Background", "Foreground"):
        raise BadRequest(f"propagationPolicy {propagation!r} is not supported")
    with api.store.lock:
        old = api.read(rt, namespace, name).obj
        old_meta = old["metadata"]
        preconditions = preconditions or {}
        if preconditions.get("uid") and preconditions["uid"] != old_meta["uid"]:
            raise Conflict(
                f"Precondition failed: UID in precondition: {preconditions['uid']}, UID in "
                f"object meta: {old_meta['uid']}",
                name=name,
                group=rt.group,
                kind=rt.plural,
            )
        wanted = preconditions.get("resourceVersion")
        if wanted and wanted != old_meta["resourceVersion"]:
            raise conflict(rt.plural, rt.group, name)
        if dry_run:
            return Deleted(obj=copy_obj(old), gone=True)
        if old_meta.get("deletionTimestamp"):
            if rt.kind == "Pod" and grace_period == 0:
                return Deleted(obj=api.remove(rt, old), gone=True)
            return Deleted(obj=copy_obj(old), gone=False)
        if rt.kind == "Namespace":
            new = copy_obj(old)
            new["metadata"]["deletionTimestamp"] = api.now()
            new.setdefault("status", {})["phase"] = "Terminating"
            api.store.put(rt.kind, new, old)
            api.wrote()
            return Deleted(obj=copy_obj(new), gone=False)
        if propagation == "Orphan":
            orphan_dependents(api, old)
        finalizers = list(old_meta.get("finalizers") or [])
        if propagation == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        graceful = rt.kind == "Pod" and _pod_needs_grace(old, grace_period)
        if finalizers or graceful:
            new = copy_obj(old)
            meta = new["metadata"]
            meta["deletionTimestamp"] = api.now()
            meta["deletionGracePeriodSeconds"] = (
                _grace(old, grace_period) if rt.kind == "Pod" else 0
            )
            if finalizers:
                meta["finalizers"] = finalizers
            api.store.put(rt.kind, new, old)
            api.wrote()
            return Deleted(obj=copy_obj(new), gone=False)
        final = api.remove(rt, old)
    api.wrote()
    return Deleted(obj=final, gone=True)


def orphan_dependents(api: KubeApi, owner: JsonObject) -> None:
    """Remove ownerReferences to `owner` from its dependents (propagationPolicy=Orphan)."""
    uid = owner["metadata"]["uid"]
    namespace = owner["metadata"].get("namespace")
    for kind in (
        "ReplicaSet",
        "Pod",
        "ControllerRevision",
        "PersistentVolumeClaim",
        "Endpoints",
        "EndpointSlice",
    ):
        for obj in list(api.store.iter_objects(kind, namespace)):
            refs = obj["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid for r in refs):
                new = copy_obj(obj)
                kept = [r for r in refs if r.get("uid") != uid]
                if kept:
                    new["metadata"]["ownerReferences"] = kept
                else:
                    new["metadata"].pop("ownerReferences", None)
                api.store.put(kind, new, obj)


def _grace(pod: JsonObject, requested: int | None) -> int:
    if requested is not None:
        return max(0, requested)
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
    return int(value) if isinstance(value, int) else 30


def _pod_needs_grace(pod: JsonObject, requested: int | None) -> bool:
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return _grace(pod, requested) > 0
