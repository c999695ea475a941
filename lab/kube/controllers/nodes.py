"""Node lifecycle: what happens to a node that stops being Ready.

As the real node lifecycle controller does: a node whose Ready condition is False gets the
`node.kubernetes.io/not-ready` taints (Unknown: `unreachable`), NoSchedule so nothing new lands
there and NoExecute so its pods are evicted once their toleration runs out (300 s by default,
from the DefaultTolerationSeconds admission), at once for pods that do not tolerate it. The
evicted pods stay Terminating (their kubelet is gone) while their controllers replace them
elsewhere. When the node is Ready again the taints go. Any other NoExecute taint (one an
operator added with `kubectl taint`) evicts the pods that do not tolerate it the same way.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.controllers.base import (
    CONTROLLER_MANAGER,
    Key,
    WorkQueue,
    condition,
    rt_of,
    run_keys,
    write_object,
)
from lab.kube.errors import NotFound
from lab.kube.jsonutil import copy_obj, get_path, parse_time, rfc3339
from lab.kube.store import Change

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
COMPONENT = "node-controller"


def _toleration_seconds(pod: JsonObject, taint: JsonObject) -> float | None:
    """How long `pod` tolerates a NoExecute `taint`: None forever, 0 not at all."""
    best: float | None = 0.0
    for toleration in get_path(pod, "spec", "tolerations", default=[]):
        if toleration.get("effect", "NoExecute") not in ("", "NoExecute"):
            continue
        key = toleration.get("key", "")
        if toleration.get("operator", "Equal") == "Exists":
            matches = not key or key == taint["key"]
        else:
            matches = key == taint["key"] and toleration.get("value", "") == taint.get("value", "")
        if not matches:
            continue
        seconds = toleration.get("tolerationSeconds")
        if seconds is None:
            return None
        best = max(best or 0.0, float(seconds))
    return best


class NodeLifecycleController:
    name = "node-lifecycle"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "Node" and change.type != "DELETED":
            self.queue.add(("", change.name))
        elif change.kind == "Pod" and change.type == "ADDED":
            node = get_path(change.obj, "spec", "nodeName")
            if node:
                self.queue.add(("", str(node)))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._sync(k, now))

    def _sync(self, key: Key, now: datetime) -> None:
        stored = self.api.store.get("Node", "", key[1])
        if stored is None:
            return
        node = stored.obj
        ready = condition(node, "Ready")
        status = (ready or {}).get("status", "Unknown")
        taints = [dict(t) for t in get_path(node, "spec", "taints", default=[])]
        ours = [t for t in taints if t.get("key") in (NOT_READY, UNREACHABLE)]
        if status == "True":
            if ours:
                node = self._set_taints(node, [t for t in taints if t not in ours])
            # Taints someone put there (`kubectl taint ... :NoExecute`) evict just the same.
            for taint in get_path(node, "spec", "taints", default=[]):
                if taint.get("effect") == "NoExecute":
                    self._evict(node, taint, now)
            return
        wanted_key = NOT_READY if status == "False" else UNREACHABLE
        if {(t.get("key"), t.get("effect")) for t in ours} != {
            (wanted_key, "NoSchedule"),
            (wanted_key, "NoExecute"),
        }:
            taints = [t for t in taints if t not in ours]
            taints.append({"key": wanted_key, "effect": "NoSchedule"})
            taints.append({"key": wanted_key, "effect": "NoExecute", "timeAdded": rfc3339(now)})
            node = self._set_taints(node, taints)
        no_execute = next(
            t
            for t in get_path(node, "spec", "taints", default=[])
            if t.get("key") == wanted_key and t.get("effect") == "NoExecute"
        )
        self._evict(node, no_execute, now)

    def _set_taints(self, node: JsonObject, taints: list[JsonObject]) -> JsonObject:
        new = copy_obj(node)
        if taints:
            new.setdefault("spec", {})["taints"] = taints
        else:
            new.setdefault("spec", {}).pop("taints", None)
        return write_object(self.api, "Node", node, new, manager=CONTROLLER_MANAGER)

    def _evict(self, node: JsonObject, taint: JsonObject, now: datetime) -> None:
        added = parse_time(taint.get("timeAdded")) or now
        name = node["metadata"]["name"]
        next_due: datetime | None = None
        for pod in self.api.store.iter_objects("Pod"):
            if get_path(pod, "spec", "nodeName") != name or get_path(
                pod, "metadata", "deletionTimestamp"
            ):
                continue
            seconds = _toleration_seconds(pod, taint)
            if seconds is None:
                continue
            due = added + timedelta(seconds=seconds)
            if due > now:
                next_due = due if next_due is None else min(next_due, due)
                continue
            meta = pod["metadata"]
            self.api.events.record(
                involved=pod,
                reason="TaintManagerEviction",
                component="taint-eviction-controller",
                message=f"Marking for deletion Pod {meta['namespace']}/{meta['name']}",
            )
            try:
                self.api.delete_object(rt_of("Pod"), meta["namespace"], meta["name"])
            except NotFound:
                continue
        if next_due is not None:
            self.queue.add_after(("", name), next_due)
