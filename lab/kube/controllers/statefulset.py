"""A simple StatefulSet controller: ordered pods `<name>-0 … <name>-(n-1)`.

OrderedReady creates one pod at a time and waits for it to be Running and Ready; Parallel
creates them all. Scale-down removes the highest ordinals first. A template change rolls the
pods from the highest ordinal down (respecting `partition`), one at a time, tracked by the
`controller-revision-hash` label and `status.currentRevision`/`updateRevision`, which is what
`kubectl rollout status statefulset` reads. Claims from `volumeClaimTemplates` are created and
bound. ControllerRevision objects are not kept.
"""

from __future__ import annotations

from datetime import datetime

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.controllers.base import (
    CONTROLLER_MANAGER,
    Key,
    WorkQueue,
    controller_of,
    pod_active,
    pod_available,
    pod_ready,
    rt_of,
    run_keys,
    write_status,
)
from lab.kube.controllers.deployment import template_hash
from lab.kube.controllers.replicaset import pod_from_template
from lab.kube.errors import AlreadyExists, ApiError, NotFound
from lab.kube.jsonutil import get_path
from lab.kube.store import Change

REVISION_LABEL = "controller-revision-hash"
COMPONENT = "statefulset-controller"


class StatefulSetController:
    name = "statefulset"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "StatefulSet":
            self.queue.add((change.namespace, change.name))
        elif change.kind == "Pod":
            for obj in (change.obj, change.old):
                ref = controller_of(obj)
                if ref is not None and ref.get("kind") == "StatefulSet":
                    self.queue.add((change.namespace, str(ref.get("name"))))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._sync(k, now))

    def _pods(self, sts: JsonObject) -> dict[int, JsonObject]:
        meta = sts["metadata"]
        prefix = meta["name"] + "-"
        pods: dict[int, JsonObject] = {}
        for pod in self.api.store.iter_objects("Pod", meta["namespace"]):
            ref = controller_of(pod)
            name = pod["metadata"]["name"]
            if ref is None or ref.get("uid") != meta["uid"] or not name.startswith(prefix):
                continue
            ordinal = name[len(prefix) :]
            if ordinal.isdigit():
                pods[int(ordinal)] = pod
        return pods

    def _sync(self, key: Key, now: datetime) -> None:
        stored = self.api.store.get("StatefulSet", *key)
        if stored is None or get_path(stored.obj, "metadata", "deletionTimestamp"):
            return
        sts = stored.obj
        spec = sts.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        parallel = spec.get("podManagementPolicy") == "Parallel"
        revision = f"{sts['metadata']['name']}-{template_hash(spec.get('template') or {}, 0)}"
        pods = self._pods(sts)
        self._act(sts, pods, replicas, parallel, revision)
        self._status(sts, self._pods(sts), revision, now)

    def _act(
        self,
        sts: JsonObject,
        pods: dict[int, JsonObject],
        replicas: int,
        parallel: bool,
        revision: str,
    ) -> None:
        for _, failed in sorted(pods.items()):
            if get_path(failed, "status", "phase") == "Failed" and pod_active(failed):
                self._delete(sts, failed)
                return
        for ordinal in range(replicas):
            existing = pods.get(ordinal)
            if existing is None:
                self._create(sts, ordinal, revision)
                if not parallel:
                    return
                continue
            if not parallel and (not pod_active(existing) or not pod_ready(existing)):
                return
        for ordinal in sorted((o for o in pods if o >= replicas), reverse=True):
            surplus = pods[ordinal]
            if pod_active(surplus):
                self._delete(sts, surplus)
            if not parallel:
                return
        # Rolling update, highest ordinal first, down to the partition.
        strategy = get_path(sts, "spec", "updateStrategy", default={})
        if strategy.get("type") == "OnDelete":
            return
        partition = int(get_path(strategy, "rollingUpdate", "partition", default=0))
        if any(not pod_active(p) or not pod_ready(p) for o, p in pods.items() if o < replicas):
            return
        for ordinal in range(replicas - 1, partition - 1, -1):
            outdated = pods.get(ordinal)
            labels = get_path(outdated, "metadata", "labels", default={})
            if outdated is not None and labels.get(REVISION_LABEL) != revision:
                self._delete(sts, outdated)
                return

    def _create(self, sts: JsonObject, ordinal: int, revision: str) -> None:
        meta = sts["metadata"]
        name = f"{meta['name']}-{ordinal}"
        template = get_path(sts, "spec", "template", default={})
        pod = pod_from_template(sts, template, name=name)
        labels = pod["metadata"]["labels"]
        labels[REVISION_LABEL] = revision
        labels["statefulset.kubernetes.io/pod-name"] = name
        labels["apps.kubernetes.io/pod-index"] = str(ordinal)
        spec = pod["spec"]
        spec.setdefault("hostname", name)
        if get_path(sts, "spec", "serviceName"):
            spec.setdefault("subdomain", sts["spec"]["serviceName"])
        volumes = spec.setdefault("volumes", [])
        for claim in get_path(sts, "spec", "volumeClaimTemplates", default=[]):
            claim_name = f"{claim['metadata']['name']}-{name}"
            self._claim(sts, claim, claim_name)
            if not any(v.get("name") == claim["metadata"]["name"] for v in volumes):
                volumes.append(
                    {
                        "name": claim["metadata"]["name"],
                        "persistentVolumeClaim": {"claimName": claim_name},
                    }
                )
        if not volumes:
            del spec["volumes"]
        try:
            self.api.create_object(
                rt_of("Pod"), meta["namespace"], pod, manager=CONTROLLER_MANAGER, internal=True
            )
        except AlreadyExists:
            return
        except ApiError as e:
            self.api.events.record(
                involved=sts,
                reason="FailedCreate",
                type="Warning",
                component=COMPONENT,
                message=f"create Pod {name} in StatefulSet {meta['name']} failed error: "
                f"{e.message}",
            )
            return
        self.api.events.record(
            involved=sts,
            reason="SuccessfulCreate",
            component=COMPONENT,
            message=f"create Pod {name} in StatefulSet {meta['name']} successful",
        )

    def _claim(self, sts: JsonObject, template: JsonObject, name: str) -> None:
        namespace = sts["metadata"]["namespace"]
        if self.api.store.get("PersistentVolumeClaim", namespace, name) is not None:
            return
        labels = dict(get_path(sts, "spec", "selector", "matchLabels", default={}))
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": dict(template.get("spec") or {}),
        }
        try:
            self.api.create_object(
                rt_of("PersistentVolumeClaim"),
                namespace,
                claim,
                manager=CONTROLLER_MANAGER,
                internal=True,
            )
        except ApiError:
            return
        self.api.events.record(
            involved=sts,
            reason="SuccessfulCreate",
            component=COMPONENT,
            message=f"create Claim {name} Pod {name.split('-', 1)[-1]} in StatefulSet "
            f"{sts['metadata']['name']} success",
        )

    def _delete(self, sts: JsonObject, pod: JsonObject) -> None:
        name = pod["metadata"]["name"]
        try:
            self.api.delete_object(rt_of("Pod"), sts["metadata"]["namespace"], name)
        except NotFound:
            return
        self.api.events.record(
            involved=sts,
            reason="SuccessfulDelete",
            component=COMPONENT,
            message=f"delete Pod {name} in StatefulSet {sts['metadata']['name']} successful",
        )

    def _status(
        self, sts: JsonObject, pods: dict[int, JsonObject], revision: str, now: datetime
    ) -> None:
        active = [p for p in pods.values() if pod_active(p)]
        min_ready = int(get_path(sts, "spec", "minReadySeconds", default=0))
        updated = sum(
            1 for p in active if get_path(p, "metadata", "labels", REVISION_LABEL) == revision
        )
        old_status = sts.get("status") or {}
        replicas = int(get_path(sts, "spec", "replicas", default=1))
        current_revision = old_status.get("currentRevision") or revision
        if updated == len(active) == replicas:
            current_revision = revision
        current = sum(
            1
            for p in active
            if get_path(p, "metadata", "labels", REVISION_LABEL) == current_revision
        )
        status: JsonObject = {
            "observedGeneration": int(sts["metadata"].get("generation", 1)),
            "replicas": len(active),
            "readyReplicas": sum(1 for p in active if pod_ready(p)),
            "currentReplicas": current,
            "updatedReplicas": updated,
            "availableReplicas": sum(1 for p in active if pod_available(p, min_ready, now)),
            "currentRevision": current_revision,
            "updateRevision": revision,
            "collisionCount": 0,
        }
        write_status(self.api, "StatefulSet", sts, status, manager=CONTROLLER_MANAGER)
