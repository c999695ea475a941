"""The scheduler: bind pending pods to nodes, or say exactly why not.

Filters run in the real scheduler's order and each node reports its first failure:
unschedulable (cordoned) nodes, untolerated NoSchedule/NoExecute taints (a NotReady node
carries node.kubernetes.io/not-ready), nodeSelector and required node affinity, then resource
requests against allocatable and pod count. A pod that fits nowhere stays Pending with
PodScheduled=False/Unschedulable and a FailedScheduling event worded as the real one ("0/3
nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: ...");
it is retried when nodes, pods or claims change, and every 30 s of lab time. Before any node
is tried, a pod whose PersistentVolumeClaim is missing or not yet bound is held back ("0/3
nodes are available: pod has unbound immediate PersistentVolumeClaims"), as the
VolumeBinding plugin's PreFilter does. Among feasible nodes the least allocated wins (ties by
name), which spreads replicas as the default scoring does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from agents.model import JsonObject
from lab.kube import quantity
from lab.kube.api import KubeApi
from lab.kube.controllers.base import (
    Key,
    WorkQueue,
    condition,
    run_keys,
    set_condition,
    write_object,
)
from lab.kube.jsonutil import copy_obj, get_path, rfc3339
from lab.kube.selectors import LabelSelector, Requirement
from lab.kube.store import Change

MANAGER = "kube-scheduler"
COMPONENT = "default-scheduler"
RETRY = timedelta(seconds=30)

AFFINITY = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE = "node(s) were unschedulable"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
UNBOUND_CLAIMS = "pod has unbound immediate PersistentVolumeClaims"


def pod_requests(pod: JsonObject) -> tuple[int, int]:
    """(cpu millis, memory bytes) the scheduler accounts for a pod."""
    spec = pod.get("spec") or {}
    cpu = mem = 0
    for container in spec.get("containers") or []:
        requests = get_path(container, "resources", "requests", default={})
        cpu += quantity.millis(requests.get("cpu"))
        mem += quantity.value(requests.get("memory"))
    for container in spec.get("initContainers") or []:
        requests = get_path(container, "resources", "requests", default={})
        cpu = max(cpu, quantity.millis(requests.get("cpu")))
        mem = max(mem, quantity.value(requests.get("memory")))
    return cpu, mem


@dataclass(slots=True)
class NodeUsage:
    cpu: int = 0
    memory: int = 0
    pods: int = 0
    names: set[str] = field(default_factory=set)


def _tolerates(toleration: JsonObject, taint: JsonObject) -> bool:
    effect = toleration.get("effect", "")
    if effect and effect != taint.get("effect"):
        return False
    op = toleration.get("operator", "Equal")
    key = toleration.get("key", "")
    if op == "Exists":
        return not key or key == taint.get("key")
    return bool(key == taint.get("key") and toleration.get("value", "") == taint.get("value", ""))


def _term_selector(term: JsonObject) -> LabelSelector:
    ops = {
        "In": "in",
        "NotIn": "notin",
        "Exists": "exists",
        "DoesNotExist": "!exists",
        "Gt": "gt",
        "Lt": "lt",
    }
    requirements = []
    for expression in term.get("matchExpressions") or []:
        op = ops.get(expression.get("operator", ""), "in")
        values = tuple(str(v) for v in expression.get("values") or [])
        requirements.append(Requirement(str(expression.get("key", "")), op, values))
    return LabelSelector(tuple(requirements))


def matches_node(pod: JsonObject, node: JsonObject) -> bool:
    labels = get_path(node, "metadata", "labels", default={})
    selector = get_path(pod, "spec", "nodeSelector", default={})
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    terms = get_path(
        pod,
        "spec",
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
        default=None,
    )
    if terms:
        return any(_term_selector(t).matches(labels) for t in terms)
    return True


def node_taints(node: JsonObject) -> list[JsonObject]:
    taints = [dict(t) for t in get_path(node, "spec", "taints", default=[])]
    ready = condition(node, "Ready")
    if (
        ready is not None
        and ready.get("status") != "True"
        and not any(t.get("key") == "node.kubernetes.io/not-ready" for t in taints)
    ):
        taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    return taints


def _untolerated(pod: JsonObject, node: JsonObject) -> JsonObject | None:
    tolerations = get_path(pod, "spec", "tolerations", default=[])
    for taint in node_taints(node):
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return taint
    return None


class Scheduler:
    name = "scheduler"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()
        self._retry_all = False

    def on_change(self, change: Change) -> None:
        if change.kind in ("Node", "PersistentVolumeClaim"):
            self._retry_all = True
        elif change.kind == "Pod":
            if change.type == "DELETED" and get_path(change.obj, "spec", "nodeName"):
                self._retry_all = True
            elif (
                change.type != "DELETED"
                and not get_path(change.obj, "spec", "nodeName")
                and (change.old is None or change.old.get("spec") != change.obj.get("spec"))
            ):
                # New pods and spec changes (added tolerations); not our own status writes.
                self.queue.add((change.namespace, change.name))

    def sync(self, now: datetime) -> bool:
        if self._retry_all:
            self._retry_all = False
            for pod in self.api.store.iter_objects("Pod"):
                if not get_path(pod, "spec", "nodeName"):
                    self.queue.add((pod["metadata"]["namespace"], pod["metadata"]["name"]))
        keys = self.queue.pop_ready(now)
        if not keys:
            return False
        nodes = sorted(self.api.store.iter_objects("Node"), key=lambda n: n["metadata"]["name"])
        usage = self._usage()
        return run_keys(self.name, keys, lambda k: self._schedule(k, nodes, usage, now))

    def _usage(self) -> dict[str, NodeUsage]:
        usage: dict[str, NodeUsage] = {}
        for pod in self.api.store.iter_objects("Pod"):
            node = get_path(pod, "spec", "nodeName")
            if not node or get_path(pod, "status", "phase") in ("Succeeded", "Failed"):
                continue
            cpu, mem = pod_requests(pod)
            entry = usage.setdefault(node, NodeUsage())
            entry.cpu += cpu
            entry.memory += mem
            entry.pods += 1
        return usage

    def _schedule(
        self, key: Key, nodes: list[JsonObject], usage: dict[str, NodeUsage], now: datetime
    ) -> None:
        stored = self.api.store.get("Pod", *key)
        if stored is None:
            return
        pod = stored.obj
        if get_path(pod, "spec", "nodeName") or get_path(pod, "metadata", "deletionTimestamp"):
            return
        if get_path(pod, "spec", "schedulerName", default="default-scheduler") != (
            "default-scheduler"
        ):
            return
        volume_problem = self._volume_problem(pod)
        if volume_problem is not None:
            # A PreFilter failure: no node is tried, none can help.
            self._unschedulable(pod, nodes, Counter(), 0, now, prefilter=volume_problem)
            return
        cpu, mem = pod_requests(pod)
        reasons: Counter[str] = Counter()
        resolvable = 0
        feasible: list[tuple[float, int, str]] = []
        for node in nodes:
            name = node["metadata"]["name"]
            failure = self._filter(pod, node, usage.get(name, NodeUsage()), cpu, mem)
            if not failure:
                allocatable = get_path(node, "status", "allocatable", default={})
                cap_cpu = max(quantity.millis(allocatable.get("cpu")), 1)
                cap_mem = max(quantity.value(allocatable.get("memory")), 1)
                used = usage.get(name, NodeUsage())
                score = ((used.cpu + cpu) / cap_cpu + (used.memory + mem) / cap_mem) / 2
                feasible.append((score, used.pods, name))
                continue
            for reason in failure:
                reasons[reason] += 1
            if any(r.startswith(("Insufficient", "Too many")) for r in failure):
                resolvable += 1
        if feasible:
            _, _, chosen = min(feasible)
            self._bind(pod, chosen, now)
            entry = usage.setdefault(chosen, NodeUsage())
            entry.cpu += cpu
            entry.memory += mem
            entry.pods += 1
            return
        self._unschedulable(pod, nodes, reasons, resolvable, now)

    def _volume_problem(self, pod: JsonObject) -> str | None:
        """Why the pod's claims keep it off every node (the VolumeBinding PreFilter): a claim
        that does not exist, or one not bound yet (the lab's classes bind Immediately)."""
        namespace = pod["metadata"]["namespace"]
        unbound = False
        for volume in get_path(pod, "spec", "volumes", default=[]):
            claim_name = get_path(volume, "persistentVolumeClaim", "claimName")
            if not claim_name:
                continue
            claim = self.api.store.get("PersistentVolumeClaim", namespace, claim_name)
            if claim is None:
                return f'persistentvolumeclaim "{claim_name}" not found'
            if get_path(claim.obj, "status", "phase") != "Bound":
                unbound = True
        return UNBOUND_CLAIMS if unbound else None

    def _filter(
        self, pod: JsonObject, node: JsonObject, used: NodeUsage, cpu: int, mem: int
    ) -> list[str]:
        if get_path(node, "spec", "unschedulable"):
            tolerations = get_path(pod, "spec", "tolerations", default=[])
            cordon = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
            if not any(_tolerates(t, cordon) for t in tolerations):
                return [UNSCHEDULABLE]
        wanted_node = get_path(pod, "spec", "nodeName")
        if wanted_node and wanted_node != node["metadata"]["name"]:
            return ["node(s) didn't match the requested node name"]
        taint = _untolerated(pod, node)
        if taint is not None:
            return [
                f"node(s) had untolerated taint {{{taint.get('key', '')}: "
                f"{taint.get('value', '')}}}"
            ]
        if not matches_node(pod, node):
            return [AFFINITY]
        allocatable = get_path(node, "status", "allocatable", default={})
        failures = []
        if used.pods + 1 > quantity.value(allocatable.get("pods") or "110"):
            failures.append("Too many pods")
        if cpu and used.cpu + cpu > quantity.millis(allocatable.get("cpu")):
            failures.append("Insufficient cpu")
        if mem and used.memory + mem > quantity.value(allocatable.get("memory")):
            failures.append("Insufficient memory")
        return failures

    def _bind(self, pod: JsonObject, node: str, now: datetime) -> None:
        new = copy_obj(pod)
        new["spec"]["nodeName"] = node
        status = new.setdefault("status", {})
        status["conditions"] = set_condition(
            status.get("conditions") or [], "PodScheduled", "True", "", "", now=rfc3339(now)
        )
        for c in status["conditions"]:
            if c["type"] == "PodScheduled":
                c.pop("reason", None)
                c.pop("message", None)
                c["lastProbeTime"] = None
        write_object(self.api, "Pod", pod, _drop_nulls(new), manager=MANAGER)
        meta = pod["metadata"]
        self.api.events.record(
            involved=pod,
            reason="Scheduled",
            component=COMPONENT,
            message=f"Successfully assigned {meta['namespace']}/{meta['name']} to {node}",
        )

    def _unschedulable(
        self,
        pod: JsonObject,
        nodes: list[JsonObject],
        reasons: Counter[str],
        resolvable: int,
        now: datetime,
        *,
        prefilter: str | None = None,
    ) -> None:
        total = len(nodes)
        if not total:
            message = "no nodes available to schedule pods"
        elif prefilter is not None:
            message = (
                f"0/{total} nodes are available: {prefilter}. preemption: 0/{total} nodes are "
                f"available: {total} {NOT_HELPFUL}."
            )
        else:
            parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
            preemption = []
            if total - resolvable:
                preemption.append(f"{total - resolvable} {NOT_HELPFUL}")
            if resolvable:
                preemption.append(f"{resolvable} {NO_VICTIMS}")
            message = (
                f"0/{total} nodes are available: {', '.join(parts)}. preemption: 0/{total} "
                f"nodes are available: {', '.join(sorted(preemption))}."
            )
        new = copy_obj(pod)
        status = new.setdefault("status", {})
        status["conditions"] = set_condition(
            status.get("conditions") or [],
            "PodScheduled",
            "False",
            "Unschedulable",
            message,
            now=rfc3339(now),
        )
        write_object(self.api, "Pod", pod, new, manager=MANAGER)
        self.api.events.record(
            involved=pod,
            reason="FailedScheduling",
            type="Warning",
            message=message,
            component=COMPONENT,
        )
        meta = pod["metadata"]
        self.queue.add_after((meta["namespace"], meta["name"]), now + RETRY)


def _drop_nulls(obj: JsonObject) -> JsonObject:
    for c in get_path(obj, "status", "conditions", default=[]):
        for key in [k for k, v in c.items() if v is None]:
            del c[key]
    return obj
