"""Object lifecycles the API server leaves to controllers.

* Garbage collection: when an owner is gone, its dependents go too (background deletion);
  an owner deleted in the foreground keeps its `foregroundDeletion` finalizer until its
  dependents are gone, then disappears.
* Namespaces: a new namespace gets its `default` ServiceAccount and `kube-root-ca.crt`
  ConfigMap; a terminating one is emptied, then its `kubernetes` finalizer is removed.
"""

from __future__ import annotations

import contextlib
from datetime import datetime

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.controllers.base import CONTROLLER_MANAGER, WorkQueue, rt_of, run_keys
from lab.kube.errors import AlreadyExists, ApiError, NotFound
from lab.kube.jsonutil import copy_obj, get_path
from lab.kube.resources import RESOURCES
from lab.kube.store import Change

#: Kinds that carry ownerReferences in the lab.
DEPENDENT_KINDS = (
    "ReplicaSet",
    "Pod",
    "ControllerRevision",
    "PersistentVolumeClaim",
    "EndpointSlice",
    "Endpoints",
    "ConfigMap",
    "Secret",
    "Service",
    "Lease",
)

ROOT_CA = (
    "-----BEGIN CERTIFICATE-----\nMIIBlablabLabClusterRootCertificateNotForUse\n"
    "-----END CERTIFICATE-----\n"
)


class GarbageCollector:
    name = "garbage-collector"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()  # keys: (namespace, owner uid)
        self._alive: dict[str, tuple[str, str, str]] = {}  # uid → (kind, namespace, name)

    def on_change(self, change: Change) -> None:
        uid = get_path(change.obj, "metadata", "uid", default="")
        if change.type == "DELETED":
            self._alive.pop(uid, None)
            self.queue.add((change.namespace, uid))
        else:
            self._alive[uid] = (change.kind, change.namespace, change.name)
            finalizers = get_path(change.obj, "metadata", "finalizers", default=[])
            if "foregroundDeletion" in finalizers and get_path(
                change.obj, "metadata", "deletionTimestamp"
            ):
                self.queue.add((change.namespace, uid))
            if change.type == "ADDED" and get_path(change.obj, "metadata", "ownerReferences"):
                for ref in change.obj["metadata"]["ownerReferences"]:
                    if ref.get("uid") not in self._alive:
                        self.queue.add((change.namespace, str(ref.get("uid"))))
        for ref in get_path(change.old, "metadata", "ownerReferences", default=[]):
            if change.type == "DELETED" and ref.get("uid") in self._alive:
                # A dependent vanished: a foreground owner may now be free to go.
                self.queue.add((change.namespace, str(ref.get("uid"))))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), self._collect)

    def _dependents(self, namespace: str, uid: str) -> list[tuple[str, JsonObject]]:
        out = []
        for kind in DEPENDENT_KINDS:
            for obj in self.api.store.iter_objects(kind, namespace):
                if any(
                    r.get("uid") == uid
                    for r in get_path(obj, "metadata", "ownerReferences", default=[])
                ):
                    out.append((kind, obj))
        return sorted(out, key=lambda item: (item[0], item[1]["metadata"]["name"]))

    def _collect(self, key: tuple[str, str]) -> None:
        namespace, uid = key
        owner = self._alive.get(uid)
        dependents = self._dependents(namespace, uid)
        if owner is None:
            for kind, obj in dependents:
                refs = obj["metadata"]["ownerReferences"]
                others = [r for r in refs if r.get("uid") != uid]
                if any(r.get("uid") in self._alive for r in others):
                    new = copy_obj(obj)
                    new["metadata"]["ownerReferences"] = others
                    self.api.update_object(
                        rt_of(kind),
                        namespace,
                        obj["metadata"]["name"],
                        new,
                        manager=CONTROLLER_MANAGER,
                        internal=True,
                    )
                    continue
                self._delete(kind, obj, propagation="Background")
            return
        kind, owner_ns, name = owner
        stored = self.api.store.get(kind, owner_ns, name)
        if stored is None or not get_path(stored.obj, "metadata", "deletionTimestamp"):
            return
        if dependents:
            for dependent_kind, obj in dependents:
                if not get_path(obj, "metadata", "deletionTimestamp"):
                    self._delete(dependent_kind, obj, propagation="Foreground")
            return
        new = copy_obj(stored.obj)
        new["metadata"]["finalizers"] = [
            f for f in new["metadata"].get("finalizers", []) if f != "foregroundDeletion"
        ]
        if not new["metadata"]["finalizers"]:
            del new["metadata"]["finalizers"]
        self.api.commit_update(
            rt_of(kind),
            stored.obj,
            new,
            manager=CONTROLLER_MANAGER,
            subresource="",
            dry_run=False,
            internal=True,
        )

    def _delete(self, kind: str, obj: JsonObject, *, propagation: str) -> None:
        meta = obj["metadata"]
        with contextlib.suppress(NotFound):
            self.api.delete_object(
                rt_of(kind), meta.get("namespace", ""), meta["name"], propagation=propagation
            )


class NamespaceController:
    name = "namespace"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "Namespace" and change.type != "DELETED":
            self.queue.add(("", change.name))
        elif change.namespace:
            ns = self.api.store.get("Namespace", "", change.namespace)
            if ns is not None and get_path(ns.obj, "metadata", "deletionTimestamp"):
                self.queue.add(("", change.namespace))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._sync(k[1]))

    def _sync(self, name: str) -> None:
        stored = self.api.store.get("Namespace", "", name)
        if stored is None:
            return
        if get_path(stored.obj, "metadata", "deletionTimestamp"):
            self._finalize(stored.obj)
        else:
            self._populate(name)

    def _populate(self, namespace: str) -> None:
        defaults: tuple[tuple[str, JsonObject], ...] = (
            (
                "ServiceAccount",
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": namespace},
                },
            ),
            (
                "ConfigMap",
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": "kube-root-ca.crt",
                        "namespace": namespace,
                        "annotations": {
                            "kubernetes.io/description": "Contains a CA bundle "
                            "that can be used to verify the kube-apiserver when "
                            "using internal endpoints such as the internal "
                            "service IP or kubernetes.default.svc. No other "
                            "usage is guaranteed across distributions of "
                            "Kubernetes clusters."
                        },
                    },
                    "data": {"ca.crt": ROOT_CA},
                },
            ),
        )
        for kind, obj in defaults:
            if self.api.store.get(kind, namespace, obj["metadata"]["name"]) is None:
                with contextlib.suppress(AlreadyExists, ApiError):
                    self.api.create_object(
                        rt_of(kind), namespace, obj, manager=CONTROLLER_MANAGER, internal=True
                    )

    def _finalize(self, namespace: JsonObject) -> None:
        name = namespace["metadata"]["name"]
        for rt in RESOURCES:
            if not rt.namespaced or rt.storage_kind:
                continue
            for obj in list(self.api.store.iter_objects(rt.kind, name)):
                if get_path(obj, "metadata", "deletionTimestamp") and rt.kind != "Pod":
                    continue
                with contextlib.suppress(NotFound):
                    self.api.delete_object(rt, name, obj["metadata"]["name"], grace_period=0)
        left = sum(
            self.api.store.count(rt.kind, name)
            for rt in RESOURCES
            if rt.namespaced and not rt.storage_kind
        )
        if left:
            return
        new = copy_obj(namespace)
        new.setdefault("spec", {})["finalizers"] = []
        self.api.commit_update(
            rt_of("Namespace"),
            namespace,
            new,
            manager=CONTROLLER_MANAGER,
            subresource="finalize",
            dry_run=False,
            internal=True,
        )
