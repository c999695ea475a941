"""ResourceQuota: admission and usage.

Admission is where the real server enforces quota: a create that would push a namespace's
usage past a quota's hard limit is refused with 403 Forbidden ("exceeded quota: ..."), and a
pod without the requests or limits a quota constrains is refused ("failed quota: ... must
specify ..."). The ReplicaSet controller turns those refusals into FailedCreate events. The
quota controller keeps `status.hard` and `status.used` current.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from agents.model import JsonObject
from lab.kube import quantity
from lab.kube.api import KubeApi
from lab.kube.controllers.base import CONTROLLER_MANAGER, WorkQueue, run_keys, write_status
from lab.kube.errors import Forbidden
from lab.kube.jsonutil import get_path
from lab.kube.resources import ResourceType
from lab.kube.store import Change, Store

#: Object-count resources by kind, in both spellings the real server accepts.
_COUNTS = {
    "Pod": ("pods", "count/pods"),
    "Service": ("services", "count/services"),
    "ConfigMap": ("configmaps", "count/configmaps"),
    "Secret": ("secrets", "count/secrets"),
    "PersistentVolumeClaim": ("persistentvolumeclaims", "count/persistentvolumeclaims"),
    "ResourceQuota": ("resourcequotas", "count/resourcequotas"),
    "Deployment": ("count/deployments.apps",),
    "ReplicaSet": ("count/replicasets.apps",),
    "StatefulSet": ("count/statefulsets.apps",),
}
_COMPUTE = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory", "cpu", "memory")


def _pod_counts(pod: JsonObject) -> Counter[str]:
    usage: Counter[str] = Counter()
    for container in get_path(pod, "spec", "containers", default=[]):
        resources = container.get("resources") or {}
        for section, prefix in (("requests", "requests."), ("limits", "limits.")):
            values = resources.get(section) or {}
            usage[prefix + "cpu"] += quantity.millis(values.get("cpu"))
            usage[prefix + "memory"] += quantity.value(values.get("memory"))
    usage["cpu"] = usage["requests.cpu"]
    usage["memory"] = usage["requests.memory"]
    return usage


def usage_of(kind: str, obj: JsonObject) -> Counter[str]:
    usage: Counter[str] = Counter()
    if kind == "Pod":
        if get_path(obj, "status", "phase") in ("Succeeded", "Failed") or get_path(
            obj, "metadata", "deletionTimestamp"
        ):
            return usage
        usage.update(_pod_counts(obj))
    for name in _COUNTS.get(kind, ()):
        usage[name] += 1
    if kind == "PersistentVolumeClaim":
        usage["requests.storage"] += quantity.value(
            get_path(obj, "spec", "resources", "requests", "storage")
        )
    if kind == "Service":
        service_type = get_path(obj, "spec", "type", default="ClusterIP")
        if service_type in ("NodePort", "LoadBalancer"):
            usage["services.nodeports"] += len(get_path(obj, "spec", "ports", default=[]))
        if service_type == "LoadBalancer":
            usage["services.loadbalancers"] += 1
    return usage


def namespace_usage(store: Store, namespace: str) -> Counter[str]:
    total: Counter[str] = Counter()
    for kind in _COUNTS:
        for obj in store.iter_objects(kind, namespace):
            total.update(usage_of(kind, obj))
    return total


def _format(resource: str, amount: int) -> str:
    if quantity.is_cpu_like(resource):
        return quantity.format_millis(amount)
    if resource.endswith("memory") or resource.endswith("storage") or resource == "memory":
        return quantity.format_bytes(amount)
    return str(amount)


def _hard(resource: str, text: str) -> int:
    return quantity.millis(text) if quantity.is_cpu_like(resource) else quantity.value(text)


class QuotaAdmission:
    def __init__(self, store: Store) -> None:
        self.store = store

    def admit(self, rt: ResourceType, obj: JsonObject, old: JsonObject | None) -> None:
        if old is not None or not rt.namespaced:
            return
        namespace = obj["metadata"].get("namespace", "")
        quotas = sorted(
            self.store.iter_objects("ResourceQuota", namespace), key=lambda q: q["metadata"]["name"]
        )
        if not quotas:
            return
        delta = usage_of(rt.kind, obj)
        name = obj["metadata"].get("name", "")
        prefix = f'{rt.group_resource} "{name}" is forbidden: '
        if rt.kind == "Pod":
            self._require_specified(prefix, obj, quotas)
        used: Counter[str] | None = None
        for quota in quotas:
            hard = get_path(quota, "spec", "hard", default={})
            exceeded = []
            for resource in sorted(hard):
                if not delta.get(resource):
                    continue
                if used is None:
                    used = namespace_usage(self.store, namespace)
                limit = _hard(resource, hard[resource])
                if used[resource] + delta[resource] > limit:
                    exceeded.append(resource)
            if exceeded:
                assert used is not None
                requested = ",".join(f"{r}={_format(r, delta[r])}" for r in exceeded)
                current = ",".join(f"{r}={_format(r, used[r])}" for r in exceeded)
                limited = ",".join(f"{r}={hard[r]}" for r in exceeded)
                raise Forbidden(
                    f"{prefix}exceeded quota: {quota['metadata']['name']}, requested: "
                    f"{requested}, used: {current}, limited: {limited}",
                    name=name,
                    group=rt.group,
                    kind=rt.plural,
                )

    def _require_specified(self, prefix: str, pod: JsonObject, quotas: list[JsonObject]) -> None:
        for quota in quotas:
            hard = get_path(quota, "spec", "hard", default={})
            missing = []
            for resource in sorted(r for r in hard if r in _COMPUTE):
                section, _, name = resource.rpartition(".")
                section = section or "requests"
                lacking = [
                    c.get("name", "")
                    for c in get_path(pod, "spec", "containers", default=[])
                    if name not in get_path(c, "resources", section, default={})
                ]
                if lacking:
                    missing.append(f"{resource} for: {','.join(lacking)}")
            if missing:
                raise Forbidden(
                    f"{prefix}failed quota: {quota['metadata']['name']}: must specify "
                    + "; ".join(missing),
                    name=pod["metadata"].get("name", ""),
                    kind="pods",
                )


class QuotaController:
    name = "resourcequota"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "ResourceQuota" or (
            change.kind in _COUNTS and self.api.store.count("ResourceQuota", change.namespace)
        ):
            self.queue.add((change.namespace, ""))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._sync(k[0]))

    def _sync(self, namespace: str) -> None:
        quotas = list(self.api.store.iter_objects("ResourceQuota", namespace))
        if not quotas:
            return
        used = namespace_usage(self.api.store, namespace)
        for quota in quotas:
            hard = dict(get_path(quota, "spec", "hard", default={}))
            status = {"hard": hard, "used": {r: _format(r, used[r]) for r in hard}}
            write_status(self.api, "ResourceQuota", quota, status, manager=CONTROLLER_MANAGER)
