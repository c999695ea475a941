"""The `scale` subresource of Deployments, ReplicaSets and StatefulSets.

`kubectl scale`, HPAs and Stratus's "scale a workload" action read and write replicas through
an autoscaling/v1 `Scale` object rather than the workload itself; a write changes only
`spec.replicas` of the parent, under the parent's resourceVersion.
"""

from __future__ import annotations

from typing import Any

from agents.model import JsonObject
from lab.kube import schema
from lab.kube.api import KubeApi, apply_patch
from lab.kube.errors import BadRequest, conflict, field_error, invalid
from lab.kube.jsonutil import copy_obj
from lab.kube.resources import SCALE_GROUP, SCALE_VERSION, ResourceType
from lab.kube.selectors import selector_string


def to_scale(obj: JsonObject) -> JsonObject:
    meta = obj["metadata"]
    status: JsonObject = {"replicas": int((obj.get("status") or {}).get("replicas", 0))}
    selector = selector_string((obj.get("spec") or {}).get("selector"))
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": f"{SCALE_GROUP}/{SCALE_VERSION}",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": int((obj.get("spec") or {}).get("replicas", 0))},
        "status": status,
    }


def get_scale(api: KubeApi, rt: ResourceType, namespace: str, name: str) -> JsonObject:
    return to_scale(api.read(rt, namespace, name).obj)


def _write(
    api: KubeApi,
    rt: ResourceType,
    parent: JsonObject,
    scale: Any,
    *,
    manager: str,
    dry_run: bool,
) -> JsonObject:
    if not isinstance(scale, dict):
        raise BadRequest("the body of the request must be a Scale object")
    decoded = schema.decode(scale, "V1Scale", kind="Scale", version=SCALE_VERSION).obj
    meta = decoded.get("metadata") or {}
    name = parent["metadata"]["name"]
    if meta.get("name") and meta["name"] != name:
        raise BadRequest(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    wanted = meta.get("resourceVersion")
    if wanted and wanted != parent["metadata"]["resourceVersion"]:
        raise conflict(rt.plural, rt.group, name)
    replicas = (decoded.get("spec") or {}).get("replicas", 0)
    if replicas < 0:
        cause = field_error(
            "FieldValueInvalid",
            "spec.replicas",
            f"Invalid value: {replicas}: must be greater than or equal to 0",
        )
        raise invalid("Scale", SCALE_GROUP, name, [cause])
    new = copy_obj(parent)
    new.setdefault("spec", {})["replicas"] = replicas
    updated = api.commit_update(
        rt, parent, new, manager=manager, subresource="scale", dry_run=dry_run, internal=False
    )
    return to_scale(updated)


def update_scale(
    api: KubeApi,
    rt: ResourceType,
    namespace: str,
    name: str,
    body: Any,
    *,
    manager: str,
    dry_run: bool = False,
) -> JsonObject:
    with api.store.lock:
        parent = api.read(rt, namespace, name).obj
        return _write(api, rt, parent, body, manager=manager, dry_run=dry_run)


def patch_scale(
    api: KubeApi,
    rt: ResourceType,
    namespace: str,
    name: str,
    patch: Any,
    *,
    patch_type: str,
    manager: str,
    dry_run: bool = False,
) -> JsonObject:
    with api.store.lock:
        parent = api.read(rt, namespace, name).obj
        current = to_scale(parent)
        patched = apply_patch(rt, current, patch, patch_type)
        return _write(api, rt, parent, patched, manager=manager, dry_run=dry_run)
