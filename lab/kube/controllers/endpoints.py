"""The endpoints controllers: Endpoints and EndpointSlices follow a Service's pods.

For every Service with a selector, the pods it selects that have an IP become addresses —
ready pods in `addresses`, the others in `notReadyAddresses` — with each service port's
targetPort resolved per pod: a number is copied through, a name is looked up among the pod's
container ports (a pod without that port is left out of that port's subset). This is how a
wrong targetPort or a failing readiness probe shows up as a Service with no endpoints.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.controllers.base import (
    CONTROLLER_MANAGER,
    Key,
    WorkQueue,
    owner_ref,
    pod_ready,
    rt_of,
    run_keys,
    write_object,
)
from lab.kube.errors import AlreadyExists, NotFound
from lab.kube.ids import fnv32a, safe_encode
from lab.kube.jsonutil import copy_obj, get_path
from lab.kube.selectors import from_match_labels
from lab.kube.store import Change

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_MANAGER = "endpointslice-controller.k8s.io"


def resolve_port(pod: JsonObject, target: Any) -> int | None:
    """A service port's targetPort for one pod (None: the pod lacks that named port)."""
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in get_path(pod, "spec", "containers", default=[]):
        for port in container.get("ports") or []:
            if port.get("name") == target:
                return int(port.get("containerPort", 0))
    return None


def _address(pod: JsonObject) -> JsonObject:
    meta = pod["metadata"]
    address: JsonObject = {
        "ip": get_path(pod, "status", "podIP"),
        "targetRef": {
            "kind": "Pod",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
        },
    }
    if get_path(pod, "spec", "nodeName"):
        address["nodeName"] = pod["spec"]["nodeName"]
    return address


class EndpointsController:
    name = "endpoints"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "Service":
            self.queue.add((change.namespace, change.name))
        elif change.kind == "Pod":
            if (
                change.old is not None
                and change.type == "MODIFIED"
                and _same_view(change.old, change.obj)
            ):
                return
            labels = [
                get_path(o, "metadata", "labels", default={})
                for o in (change.obj, change.old)
                if o is not None
            ]
            for service in self.api.store.iter_objects("Service", change.namespace):
                selector = from_match_labels(get_path(service, "spec", "selector"))
                if any(selector.matches(label) for label in labels):
                    self.queue.add((change.namespace, service["metadata"]["name"]))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), self._sync)

    def _sync(self, key: Key) -> None:
        namespace, name = key
        stored = self.api.store.get("Service", namespace, name)
        if stored is None:
            self._delete(namespace, name)
            return
        service = stored.obj
        raw_selector = get_path(service, "spec", "selector")
        if not raw_selector:
            return  # endpoints of a selector-less Service are managed by hand
        selector = from_match_labels(raw_selector)
        pods = sorted(
            (
                p
                for p in self.api.store.iter_objects("Pod", namespace)
                if selector.matches(get_path(p, "metadata", "labels", default={}))
                and get_path(p, "status", "podIP")
                and not get_path(p, "metadata", "deletionTimestamp")
                and get_path(p, "status", "phase") not in ("Succeeded", "Failed")
            ),
            key=lambda p: p["metadata"]["name"],
        )
        groups: dict[tuple[tuple[str, int, str], ...], tuple[list[JsonObject], list[JsonObject]]]
        groups = {}
        for pod in pods:
            ports = []
            for port in get_path(service, "spec", "ports", default=[]):
                number = resolve_port(pod, port.get("targetPort", port.get("port")))
                if number is not None:
                    ports.append((port.get("name", ""), number, port.get("protocol", "TCP")))
            if not ports:
                continue
            ready, not_ready = groups.setdefault(tuple(ports), ([], []))
            (ready if pod_ready(pod) else not_ready).append(pod)
        self._write_endpoints(service, groups)
        self._write_slices(service, groups)

    def _write_endpoints(self, service: JsonObject, groups: dict[Any, Any]) -> None:
        meta = service["metadata"]
        subsets = []
        for ports, (ready, not_ready) in sorted(groups.items()):
            subset: JsonObject = {}
            if ready:
                subset["addresses"] = sorted((_address(p) for p in ready), key=lambda a: a["ip"])
            if not_ready:
                subset["notReadyAddresses"] = sorted(
                    (_address(p) for p in not_ready), key=lambda a: a["ip"]
                )
            subset["ports"] = [_port(n, p, proto) for n, p, proto in ports]
            subsets.append(subset)
        wanted: JsonObject = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "labels": dict(meta.get("labels") or {}),
            },
        }
        if not wanted["metadata"]["labels"]:
            del wanted["metadata"]["labels"]
        if subsets:
            wanted["subsets"] = subsets
        self._upsert("Endpoints", wanted)

    def _write_slices(self, service: JsonObject, groups: dict[Any, Any]) -> None:
        meta = service["metadata"]
        wanted_names: set[str] = set()
        for ports, (ready, not_ready) in sorted(groups.items()) or [((), ([], []))]:
            suffix = safe_encode(str(fnv32a(repr(ports).encode())))[:5]
            name = f"{meta['name']}-{suffix}"
            wanted_names.add(name)
            endpoints = []
            for pod in sorted([*ready, *not_ready], key=lambda p: p["status"]["podIP"]):
                is_ready = pod_ready(pod)
                endpoint: JsonObject = {
                    "addresses": [pod["status"]["podIP"]],
                    "conditions": {"ready": is_ready, "serving": is_ready, "terminating": False},
                    "targetRef": _address(pod)["targetRef"],
                }
                if get_path(pod, "spec", "nodeName"):
                    endpoint["nodeName"] = pod["spec"]["nodeName"]
                endpoints.append(endpoint)
            labels = {
                **(meta.get("labels") or {}),
                SERVICE_NAME_LABEL: meta["name"],
                MANAGED_BY: SLICE_MANAGER,
            }
            wanted: JsonObject = {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": name,
                    "namespace": meta["namespace"],
                    "labels": labels,
                    "ownerReferences": [owner_ref(service)],
                },
                "addressType": "IPv4",
                "endpoints": endpoints,
                # Slices always carry the port name (kubectl dereferences it).
                "ports": [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports],
            }
            self._upsert("EndpointSlice", wanted)
        for existing in list(self.api.store.iter_objects("EndpointSlice", meta["namespace"])):
            labels = get_path(existing, "metadata", "labels", default={})
            if (
                labels.get(SERVICE_NAME_LABEL) == meta["name"]
                and labels.get(MANAGED_BY) == SLICE_MANAGER
                and existing["metadata"]["name"] not in wanted_names
            ):
                self._remove("EndpointSlice", meta["namespace"], existing["metadata"]["name"])

    def _upsert(self, kind: str, wanted: JsonObject) -> None:
        meta = wanted["metadata"]
        stored = self.api.store.get(kind, meta["namespace"], meta["name"])
        if stored is None:
            with contextlib.suppress(AlreadyExists):
                self.api.create_object(
                    rt_of(kind),
                    meta["namespace"],
                    wanted,
                    manager=CONTROLLER_MANAGER,
                    internal=True,
                )
            return
        current = stored.obj
        new = copy_obj(current)
        for key, value in wanted.items():
            if key != "metadata":
                new[key] = value
        for key in [k for k in ("subsets",) if k in new and k not in wanted]:
            del new[key]
        for key in ("labels", "ownerReferences"):
            if key in meta:
                new["metadata"][key] = meta[key]
        if new != current:
            write_object(self.api, kind, current, new, manager=CONTROLLER_MANAGER)

    def _delete(self, namespace: str, name: str) -> None:
        self._remove("Endpoints", namespace, name)
        for existing in list(self.api.store.iter_objects("EndpointSlice", namespace)):
            if get_path(existing, "metadata", "labels", SERVICE_NAME_LABEL) == name:
                self._remove("EndpointSlice", namespace, existing["metadata"]["name"])

    def _remove(self, kind: str, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFound):
            self.api.delete_object(rt_of(kind), namespace, name)


def _port(name: str, port: int, protocol: str) -> JsonObject:
    out: JsonObject = {"port": port, "protocol": protocol}
    if name:
        out["name"] = name
    return out


def _same_view(old: JsonObject, new: JsonObject) -> bool:
    """Whether a pod change leaves everything endpoints depend on unchanged."""

    def view(pod: JsonObject) -> tuple[Any, ...]:
        return (
            get_path(pod, "metadata", "labels"),
            get_path(pod, "metadata", "deletionTimestamp"),
            get_path(pod, "status", "podIP"),
            get_path(pod, "status", "phase"),
            pod_ready(pod),
            get_path(pod, "spec", "nodeName"),
        )

    return view(old) == view(new)
