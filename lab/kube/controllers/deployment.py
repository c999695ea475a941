"""The Deployment controller: Deployment → ReplicaSets, with revisions and rollouts.

Follows the real controller closely because kubectl's rollout commands read what it writes:
each distinct pod template gets a ReplicaSet named `<deployment>-<pod-template-hash>`
carrying the `deployment.kubernetes.io/revision` annotation (reused and re-numbered when a
rollback returns to an old template, with `revision-history`); RollingUpdate honours
maxSurge/maxUnavailable with the real scale-up/scale-down arithmetic; Recreate scales the old
ReplicaSets to zero first; old ReplicaSets beyond revisionHistoryLimit are deleted; and the
status (observedGeneration, replica counts, Available/Progressing conditions with their real
reasons, ProgressDeadlineExceeded) is what `kubectl rollout status` waits on.
"""

from __future__ import annotations

import json
from datetime import datetime

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.controllers.base import (
    CONTROLLER_MANAGER,
    Key,
    WorkQueue,
    controller_of,
    iter_owned,
    owner_ref,
    rt_of,
    run_keys,
    write_object,
    write_status,
)
from lab.kube.controllers.deployment_status import rollout_status, surge_and_unavailable
from lab.kube.errors import AlreadyExists
from lab.kube.ids import fnv32a, safe_encode
from lab.kube.jsonutil import copy_obj, get_path
from lab.kube.store import Change

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
HASH_LABEL = "pod-template-hash"
COMPONENT = "deployment-controller"

#: Deployment annotations never copied onto its ReplicaSets.
_NOT_COPIED = {
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED,
    MAX_REPLICAS,
}


def template_hash(template: JsonObject, collision_count: int) -> str:
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


def _without_hash(template: JsonObject) -> JsonObject:
    out = copy_obj(template)
    labels = out.get("metadata", {}).get("labels")
    if labels is not None:
        labels.pop(HASH_LABEL, None)
    return out


def revision(obj: JsonObject) -> int:
    text = get_path(obj, "metadata", "annotations", REVISION, default="0")
    return int(text) if str(text).isdigit() else 0


def _replicas(rs: JsonObject) -> int:
    return int(get_path(rs, "spec", "replicas", default=0))


def _status_count(rs: JsonObject, field: str) -> int:
    return int(get_path(rs, "status", field, default=0))


class DeploymentController:
    name = "deployment"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "Deployment":
            self.queue.add((change.namespace, change.name))
        elif change.kind == "ReplicaSet":
            for obj in (change.obj, change.old):
                ref = controller_of(obj)
                if ref is not None and ref.get("kind") == "Deployment":
                    self.queue.add((change.namespace, str(ref.get("name"))))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._sync(k, now))

    # ------------------------------------------------------------------ sync

    def _owned(self, deployment: JsonObject) -> list[JsonObject]:
        meta = deployment["metadata"]
        sets = list(iter_owned(self.api, "ReplicaSet", meta["namespace"], meta["uid"]))
        return sorted(
            sets,
            key=lambda rs: (rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"]),
        )

    def _sync(self, key: Key, now: datetime) -> None:
        stored = self.api.store.get("Deployment", *key)
        if stored is None or get_path(stored.obj, "metadata", "deletionTimestamp"):
            return
        deployment = stored.obj
        sets = self._owned(deployment)
        template = get_path(deployment, "spec", "template", default={})
        new_rs = next(
            (
                rs
                for rs in sets
                if _without_hash(get_path(rs, "spec", "template", default={})) == template
            ),
            None,
        )
        old_sets = [rs for rs in sets if rs is not new_rs]
        created = False
        if get_path(deployment, "spec", "paused"):
            self._status(deployment, new_rs, old_sets, now, created=False)
            return
        new_rs, created = self._ensure_new(deployment, new_rs, old_sets, now)
        if new_rs is None:
            return
        strategy = get_path(deployment, "spec", "strategy", "type", default="RollingUpdate")
        if strategy == "Recreate":
            self._recreate(deployment, new_rs, old_sets)
        else:
            self._rolling(deployment, new_rs, old_sets)
        self._cleanup(deployment, old_sets)
        fresh = self.api.store.get("Deployment", *key)
        if fresh is None:
            return
        sets = self._owned(fresh.obj)
        new_rs = next(
            (rs for rs in sets if rs["metadata"]["name"] == new_rs["metadata"]["name"]), None
        )
        self._status(
            fresh.obj, new_rs, [rs for rs in sets if rs is not new_rs], now, created=created
        )

    # ------------------------------------------------------------------ new ReplicaSet

    def _ensure_new(
        self,
        deployment: JsonObject,
        new_rs: JsonObject | None,
        old_sets: list[JsonObject],
        now: datetime,
    ) -> tuple[JsonObject | None, bool]:
        max_old = max((revision(rs) for rs in old_sets), default=0)
        wanted_revision = max_old + 1
        annotations = {
            k: v
            for k, v in get_path(deployment, "metadata", "annotations", default={}).items()
            if k not in _NOT_COPIED
        }
        replicas = int(get_path(deployment, "spec", "replicas", default=1))
        surge, _ = surge_and_unavailable(deployment)
        created = False
        if new_rs is None:
            new_rs = self._create_rs(
                deployment,
                old_sets=old_sets,
                rev=wanted_revision,
                annotations=annotations,
                replicas=replicas,
                surge=surge,
            )
            if new_rs is None:
                return None, False
            created = True
        else:
            current = revision(new_rs)
            rs_annotations = dict(get_path(new_rs, "metadata", "annotations", default={}))
            merged = {**rs_annotations, **annotations}
            if current < wanted_revision and old_sets and current <= max_old:
                history = [h for h in rs_annotations.get(REVISION_HISTORY, "").split(",") if h]
                if current:
                    history.append(str(current))
                merged[REVISION_HISTORY] = ",".join(history)
                merged[REVISION] = str(wanted_revision)
            elif current == 0:
                merged[REVISION] = str(wanted_revision)
            if merged != rs_annotations:
                updated = copy_obj(new_rs)
                updated["metadata"]["annotations"] = merged
                new_rs = write_object(
                    self.api, "ReplicaSet", new_rs, updated, manager=CONTROLLER_MANAGER
                )
        self._set_deployment_revision(deployment, revision(new_rs))
        return new_rs, created

    def _create_rs(
        self,
        deployment: JsonObject,
        *,
        old_sets: list[JsonObject],
        rev: int,
        annotations: dict[str, str],
        replicas: int,
        surge: int,
    ) -> JsonObject | None:
        meta = deployment["metadata"]
        template = get_path(deployment, "spec", "template", default={})
        collisions = int(get_path(deployment, "status", "collisionCount", default=0))
        for _ in range(5):
            pod_hash = template_hash(template, collisions)
            rs_template = copy_obj(template)
            rs_template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
            selector = copy_obj(get_path(deployment, "spec", "selector", default={}))
            selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
            start = self._initial_replicas(deployment, old_sets, replicas, surge)
            rs = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": f"{meta['name']}-{pod_hash}",
                    "namespace": meta["namespace"],
                    "labels": dict(rs_template["metadata"]["labels"]),
                    "annotations": {
                        **annotations,
                        REVISION: str(rev),
                        DESIRED: str(replicas),
                        MAX_REPLICAS: str(replicas + surge),
                    },
                    "ownerReferences": [owner_ref(deployment)],
                },
                "spec": {
                    "replicas": start,
                    "minReadySeconds": int(
                        get_path(deployment, "spec", "minReadySeconds", default=0)
                    ),
                    "selector": selector,
                    "template": rs_template,
                },
            }
            try:
                created, _ = self.api.create_object(
                    rt_of("ReplicaSet"),
                    meta["namespace"],
                    rs,
                    manager=CONTROLLER_MANAGER,
                    internal=True,
                )
            except AlreadyExists:
                collisions += 1
                status = {**(deployment.get("status") or {}), "collisionCount": collisions}
                write_status(self.api, "Deployment", deployment, status, manager=CONTROLLER_MANAGER)
                stored = self.api.store.get("Deployment", meta["namespace"], meta["name"])
                if stored is None:
                    return None
                deployment = stored.obj
                continue
            if start:
                self._scaled_event(deployment, created, 0, start)
            return created
        return None

    def _initial_replicas(
        self, deployment: JsonObject, old_sets: list[JsonObject], replicas: int, surge: int
    ) -> int:
        if get_path(deployment, "spec", "strategy", "type") == "Recreate":
            return (
                0
                if any(_replicas(rs) or _status_count(rs, "replicas") for rs in old_sets)
                else replicas
            )
        current = sum(_replicas(rs) for rs in old_sets)
        return max(0, min(replicas, replicas + surge - current))

    def _set_deployment_revision(self, deployment: JsonObject, rev: int) -> None:
        annotations = get_path(deployment, "metadata", "annotations", default={})
        if annotations.get(REVISION) == str(rev):
            return
        stored = self.api.store.get(
            "Deployment", deployment["metadata"]["namespace"], deployment["metadata"]["name"]
        )
        if stored is None:
            return
        updated = copy_obj(stored.obj)
        updated["metadata"].setdefault("annotations", {})[REVISION] = str(rev)
        write_object(self.api, "Deployment", stored.obj, updated, manager=CONTROLLER_MANAGER)

    # ------------------------------------------------------------------ scaling

    def _scale(self, deployment: JsonObject, rs: JsonObject, replicas: int) -> None:
        old = _replicas(rs)
        spec_replicas = int(get_path(deployment, "spec", "replicas", default=1))
        surge, _ = surge_and_unavailable(deployment)
        annotations = dict(get_path(rs, "metadata", "annotations", default={}))
        wanted_annotations = {
            **annotations,
            DESIRED: str(spec_replicas),
            MAX_REPLICAS: str(spec_replicas + surge),
        }
        if old == replicas and annotations == wanted_annotations:
            return
        updated = copy_obj(rs)
        updated["spec"]["replicas"] = replicas
        updated["metadata"]["annotations"] = wanted_annotations
        write_object(self.api, "ReplicaSet", rs, updated, manager=CONTROLLER_MANAGER)
        if old != replicas:
            self._scaled_event(deployment, rs, old, replicas)

    def _scaled_event(self, deployment: JsonObject, rs: JsonObject, old: int, new: int) -> None:
        direction = "up" if new > old else "down"
        self.api.events.record(
            involved=deployment,
            reason="ScalingReplicaSet",
            component=COMPONENT,
            message=f"Scaled {direction} replica set {rs['metadata']['name']} from {old} to {new}",
        )

    def _fresh(self, rs: JsonObject) -> JsonObject:
        stored = self.api.store.get(
            "ReplicaSet", rs["metadata"]["namespace"], rs["metadata"]["name"]
        )
        return stored.obj if stored is not None else rs

    def _recreate(
        self, deployment: JsonObject, new_rs: JsonObject, old_sets: list[JsonObject]
    ) -> None:
        for rs in old_sets:
            if _replicas(rs):
                self._scale(deployment, rs, 0)
        if any(_status_count(self._fresh(rs), "replicas") for rs in old_sets):
            return
        self._scale(
            deployment,
            self._fresh(new_rs),
            int(get_path(deployment, "spec", "replicas", default=1)),
        )

    def _rolling(
        self, deployment: JsonObject, new_rs: JsonObject, old_sets: list[JsonObject]
    ) -> None:
        replicas = int(get_path(deployment, "spec", "replicas", default=1))
        surge, unavailable = surge_and_unavailable(deployment)
        active_old = [rs for rs in old_sets if _replicas(rs)]
        if not active_old:
            self._scale(deployment, new_rs, replicas)
            return
        # Scale up the new ReplicaSet within maxSurge.
        all_sets = [new_rs, *old_sets]
        current = sum(_replicas(rs) for rs in all_sets)
        new_count = _replicas(new_rs)
        if new_count < replicas and current < replicas + surge:
            new_count += min(replicas + surge - current, replicas - new_count)
            self._scale(deployment, new_rs, new_count)
        elif new_count > replicas:
            new_count = replicas
            self._scale(deployment, new_rs, new_count)
        new_rs = self._fresh(new_rs)
        # Scale down old ReplicaSets within maxUnavailable.
        all_pods = sum(_replicas(rs) for rs in [new_rs, *old_sets])
        min_available = replicas - unavailable
        new_unavailable = _replicas(new_rs) - _status_count(new_rs, "availableReplicas")
        budget = all_pods - min_available - new_unavailable
        if budget <= 0:
            return
        cleaned = 0
        remaining: list[JsonObject] = []
        for rs in old_sets:
            count = _replicas(rs)
            unhealthy = count - _status_count(rs, "availableReplicas")
            if count and unhealthy > 0 and cleaned < budget:
                down = min(budget - cleaned, unhealthy)
                cleaned += down
                self._scale(deployment, rs, count - down)
            remaining.append(self._fresh(rs))
        available = sum(_status_count(rs, "availableReplicas") for rs in [new_rs, *remaining])
        to_scale_down = available - min_available
        done = 0
        for rs in remaining:
            if done >= to_scale_down:
                break
            count = _replicas(rs)
            if not count:
                continue
            down = min(count, to_scale_down - done)
            done += down
            self._scale(deployment, rs, count - down)

    def _cleanup(self, deployment: JsonObject, old_sets: list[JsonObject]) -> None:
        limit = int(get_path(deployment, "spec", "revisionHistoryLimit", default=10))
        idle = [self._fresh(rs) for rs in old_sets]
        idle = [
            rs
            for rs in idle
            if not _replicas(rs)
            and not _status_count(rs, "replicas")
            and not get_path(rs, "metadata", "deletionTimestamp")
        ]
        idle.sort(key=revision)
        for rs in idle[: max(0, len(idle) - limit)]:
            self.api.delete_object(
                rt_of("ReplicaSet"), rs["metadata"]["namespace"], rs["metadata"]["name"]
            )

    # ------------------------------------------------------------------ status

    def _status(
        self,
        deployment: JsonObject,
        new_rs: JsonObject | None,
        old_sets: list[JsonObject],
        now: datetime,
        *,
        created: bool,
    ) -> None:
        status, recheck = rollout_status(deployment, new_rs, old_sets, now, created=created)
        if recheck is not None:
            meta = deployment["metadata"]
            self.queue.add_after((meta["namespace"], meta["name"]), recheck)
        write_status(self.api, "Deployment", deployment, status, manager=CONTROLLER_MANAGER)
