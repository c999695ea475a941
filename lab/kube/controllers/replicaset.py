"""The ReplicaSet controller: keep `spec.replicas` active pods from the template.

As the real one: adopts orphan pods that match the selector and releases owned pods that no
longer do; creates missing pods (a quota refusal becomes a FailedCreate event and a
ReplicaFailure condition, then a retry); deletes surplus pods, least valuable first (unscheduled,
pending, not ready, most restarts, youngest); and reports replicas, ready and available counts.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.controllers.base import (
    CONTROLLER_MANAGER,
    Key,
    WorkQueue,
    condition,
    controller_of,
    iter_owned,
    owner_ref,
    pod_active,
    pod_available,
    pod_ready,
    rt_of,
    run_keys,
    write_object,
    write_status,
)
from lab.kube.errors import ApiError, NotFound
from lab.kube.jsonutil import copy_obj, get_path, parse_time, rfc3339
from lab.kube.selectors import from_label_selector
from lab.kube.store import Change

logger = logging.getLogger(__name__)


#: Pods created per ReplicaSet per pass (the real controller's slow-start burst).
BURST = 500
RETRY_AFTER = timedelta(seconds=10)
COMPONENT = "replicaset-controller"


def pod_from_template(
    owner: JsonObject, template: JsonObject, *, name: str = "", generate_name: str = ""
) -> JsonObject:
    meta = template.get("metadata") or {}
    pod_meta: JsonObject = {
        "namespace": owner["metadata"]["namespace"],
        "labels": dict(meta.get("labels") or {}),
        "ownerReferences": [owner_ref(owner)],
    }
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    if name:
        pod_meta["name"] = name
    else:
        pod_meta["generateName"] = generate_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": copy_obj(template.get("spec") or {}),
    }


def _deletion_rank(pod: JsonObject) -> tuple[Any, ...]:
    """Lower ranks are deleted first (ActivePods ordering)."""
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}
    restarts = sum(
        int(cs.get("restartCount", 0))
        for cs in get_path(pod, "status", "containerStatuses", default=[])
    )
    created = get_path(pod, "metadata", "creationTimestamp", default="")
    return (
        1 if get_path(pod, "spec", "nodeName") else 0,
        phase_rank.get(get_path(pod, "status", "phase", default=""), 0),
        1 if pod_ready(pod) else 0,
        -restarts,
        # younger first: invert the timestamp ordering
        [-ord(ch) for ch in created],
        pod["metadata"]["name"],
    )


def _only_status_changed(old: JsonObject | None, new: JsonObject | None) -> bool:
    if old is None or new is None:
        return False
    keep = ("generation", "labels", "ownerReferences", "deletionTimestamp", "annotations")
    return old.get("spec") == new.get("spec") and all(
        get_path(old, "metadata", key) == get_path(new, "metadata", key) for key in keep
    )


class ReplicaSetController:
    name = "replicaset"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "ReplicaSet":
            # Its own status writes need no resync: re-queueing on them made a quota refusal
            # (whose message names a fresh pod each time) retry at once, forever, instead of
            # after RETRY_AFTER.
            if not _only_status_changed(change.old, change.obj):
                self.queue.add((change.namespace, change.name))
        elif change.kind == "Pod":
            for obj in (change.obj, change.old):
                ref = controller_of(obj)
                if ref is not None and ref.get("kind") == "ReplicaSet":
                    self.queue.add((change.namespace, str(ref.get("name"))))
            if controller_of(change.obj) is None and change.type != "DELETED":
                labels = get_path(change.obj, "metadata", "labels", default={})
                for rs in self.api.store.iter_objects("ReplicaSet", change.namespace):
                    if from_label_selector(get_path(rs, "spec", "selector")).matches(labels):
                        self.queue.add((change.namespace, rs["metadata"]["name"]))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._sync(k, now))

    def _sync(self, key: Key, now: datetime) -> None:
        namespace, name = key
        stored = self.api.store.get("ReplicaSet", namespace, name)
        if stored is None:
            return
        rs = stored.obj
        uid = rs["metadata"]["uid"]
        selector = from_label_selector(get_path(rs, "spec", "selector"))
        owned: list[JsonObject] = []
        for pod in list(self.api.store.iter_objects("Pod", namespace)):
            ref = controller_of(pod)
            labels = get_path(pod, "metadata", "labels", default={})
            if ref is not None and ref.get("uid") == uid:
                if selector.matches(labels) or get_path(pod, "metadata", "deletionTimestamp"):
                    owned.append(pod)
                else:
                    self._release(pod, uid)
            elif (
                ref is None
                and selector.matches(labels)
                and pod_active(pod)
                and not get_path(rs, "metadata", "deletionTimestamp")
            ):
                owned.append(self._adopt(pod, rs))
        active = [p for p in owned if pod_active(p)]
        failure: str | None = None
        if not get_path(rs, "metadata", "deletionTimestamp"):
            failure = self._scale(rs, active, now)
            active = [p for p in iter_owned(self.api, "Pod", namespace, uid) if pod_active(p)]
        self._status(rs, active, failure, now)

    def _adopt(self, pod: JsonObject, rs: JsonObject) -> JsonObject:
        new = copy_obj(pod)
        refs = new["metadata"].setdefault("ownerReferences", [])
        refs.append(owner_ref(rs))
        return write_object(self.api, "Pod", pod, new, manager=CONTROLLER_MANAGER)

    def _release(self, pod: JsonObject, uid: str) -> None:
        new = copy_obj(pod)
        refs = [r for r in new["metadata"].get("ownerReferences", []) if r.get("uid") != uid]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        write_object(self.api, "Pod", pod, new, manager=CONTROLLER_MANAGER)

    def _scale(self, rs: JsonObject, active: list[JsonObject], now: datetime) -> str | None:
        wanted = int(get_path(rs, "spec", "replicas", default=1))
        diff = len(active) - wanted
        meta = rs["metadata"]
        if diff < 0:
            template = get_path(rs, "spec", "template", default={})
            for _ in range(min(-diff, BURST)):
                pod = pod_from_template(rs, template, generate_name=f"{meta['name']}-")
                try:
                    created, _ = self.api.create_object(
                        rt_of("Pod"),
                        meta["namespace"],
                        pod,
                        manager=CONTROLLER_MANAGER,
                        internal=True,
                    )
                except ApiError as e:
                    self.api.events.record(
                        involved=rs,
                        reason="FailedCreate",
                        type="Warning",
                        message=f"Error creating: {e.message}",
                        component=COMPONENT,
                    )
                    self.queue.add_after((meta["namespace"], meta["name"]), now + RETRY_AFTER)
                    return e.message
                self.api.events.record(
                    involved=rs,
                    reason="SuccessfulCreate",
                    message=f"Created pod: {created['metadata']['name']}",
                    component=COMPONENT,
                )
            if -diff > BURST:
                self.queue.add((meta["namespace"], meta["name"]))
        elif diff > 0:
            for pod in sorted(active, key=_deletion_rank)[:diff]:
                try:
                    self.api.delete_object(rt_of("Pod"), meta["namespace"], pod["metadata"]["name"])
                except NotFound:
                    continue
                self.api.events.record(
                    involved=rs,
                    reason="SuccessfulDelete",
                    message=f"Deleted pod: {pod['metadata']['name']}",
                    component=COMPONENT,
                )
        return None

    def _status(
        self, rs: JsonObject, active: list[JsonObject], failure: str | None, now: datetime
    ) -> None:
        stored = self.api.store.get(
            "ReplicaSet", rs["metadata"]["namespace"], rs["metadata"]["name"]
        )
        if stored is None:
            return
        rs = stored.obj
        min_ready = int(get_path(rs, "spec", "minReadySeconds", default=0))
        template_labels = get_path(rs, "spec", "template", "metadata", "labels", default={})
        status: JsonObject = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(
                1
                for p in active
                if all(
                    get_path(p, "metadata", "labels", default={}).get(k) == v
                    for k, v in template_labels.items()
                )
            ),
            "readyReplicas": sum(1 for p in active if pod_ready(p)),
            "availableReplicas": sum(1 for p in active if pod_available(p, min_ready, now)),
            "observedGeneration": int(rs["metadata"].get("generation", 1)),
        }
        if min_ready > 0:
            for pod in active:
                ready = condition(pod, "Ready")
                since = parse_time((ready or {}).get("lastTransitionTime"))
                if pod_ready(pod) and since is not None and not pod_available(pod, min_ready, now):
                    self.queue.add_after(
                        (rs["metadata"]["namespace"], rs["metadata"]["name"]),
                        since + timedelta(seconds=min_ready),
                    )
        conditions = [
            c
            for c in get_path(rs, "status", "conditions", default=[])
            if c.get("type") != "ReplicaFailure"
        ]
        if failure:
            conditions.append(
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": "FailedCreate",
                    "message": failure,
                    "lastTransitionTime": rfc3339(now),
                }
            )
        if conditions:
            status["conditions"] = conditions
        # Keep the previous transition time of an unchanged failure condition.
        old_failure = condition(rs, "ReplicaFailure")
        if failure and old_failure is not None and old_failure.get("message") == failure:
            status["conditions"] = [
                c if c.get("type") != "ReplicaFailure" else old_failure
                for c in status["conditions"]
            ]
        write_status(self.api, "ReplicaSet", rs, status, manager=CONTROLLER_MANAGER)
