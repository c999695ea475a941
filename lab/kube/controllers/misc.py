"""Small controllers: volume binding, HPA bounds, event expiry.

* PersistentVolumeClaims bind at once to a volume named `pvc-<uid>` of the requested size
  when their storage class exists (the lab has a single default class, "standard", with
  Immediate binding). A claim naming another class stays Pending and, as the real
  PersistentVolume controller does, reports a ProvisioningFailed warning
  (`storageclass.storage.k8s.io "fast" not found`) on each resync; a claim asking for no
  class (`""`) waits for a pre-provisioned volume the lab never has (FailedBinding).
* HorizontalPodAutoscalers: the lab has no metrics API, so like a real HPA whose metrics fail
  it keeps replicas within [minReplicas, maxReplicas] and reports ScalingActive=False.
* Events expire an hour of lab time after they were last seen.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from lab.kube import scale as scale_api
from lab.kube.api import KubeApi
from lab.kube.controllers.base import (
    CONTROLLER_MANAGER,
    WorkQueue,
    rt_of,
    run_keys,
    set_condition,
    write_object,
    write_status,
)
from lab.kube.errors import ApiError
from lab.kube.jsonutil import copy_obj, get_path, rfc3339
from lab.kube.resources import by_kind
from lab.kube.store import Change

#: The lab's storage classes (a kind-like cluster's one provisioner); the first is the default.
STORAGE_CLASSES = ("standard",)
DEFAULT_STORAGE_CLASS = STORAGE_CLASSES[0]
#: The PersistentVolume controller's resync period: a Pending claim is retried (and its
#: warning repeated) this often.
RESYNC = timedelta(seconds=15)


class VolumeBinder:
    name = "persistentvolume-binder"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "PersistentVolumeClaim" and change.type != "DELETED":
            self.queue.add((change.namespace, change.name))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._bind(k, now))

    def _bind(self, key: tuple[str, str], now: datetime) -> None:
        stored = self.api.store.get("PersistentVolumeClaim", *key)
        if stored is None or get_path(stored.obj, "status", "phase") == "Bound":
            return
        claim = stored.obj
        wanted = get_path(claim, "spec", "storageClassName")
        if wanted is not None and wanted not in STORAGE_CLASSES:
            if wanted:
                reason, message = (
                    "ProvisioningFailed",
                    (f'storageclass.storage.k8s.io "{wanted}" not found'),
                )
            else:
                reason, message = (
                    "FailedBinding",
                    ("no persistent volumes available for this claim and no storage class is set"),
                )
            self.api.events.record(
                involved=claim,
                reason=reason,
                type="Warning",
                message=message,
                component="persistentvolume-controller",
            )
            self.queue.add_after(key, now + RESYNC)
            return
        new = copy_obj(claim)
        spec = new.setdefault("spec", {})
        spec.setdefault("storageClassName", DEFAULT_STORAGE_CLASS)
        spec["volumeName"] = f"pvc-{claim['metadata']['uid']}"
        annotations = new["metadata"].setdefault("annotations", {})
        annotations["pv.kubernetes.io/bind-completed"] = "yes"
        annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
        new["status"] = {
            "phase": "Bound",
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "capacity": {
                "storage": get_path(spec, "resources", "requests", "storage", default="1Gi")
            },
        }
        write_object(self.api, "PersistentVolumeClaim", claim, new, manager=CONTROLLER_MANAGER)


class HorizontalPodAutoscalerController:
    name = "horizontal-pod-autoscaler"
    period = timedelta(seconds=15)

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "HorizontalPodAutoscaler" and change.type != "DELETED":
            self.queue.add((change.namespace, change.name))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._sync(k, now))

    def _sync(self, key: tuple[str, str], now: datetime) -> None:
        stored = self.api.store.get("HorizontalPodAutoscaler", *key)
        if stored is None:
            return
        hpa = stored.obj
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        stamp = rfc3339(now)
        status = copy_obj(hpa.get("status") or {})
        conditions = status.get("conditions") or []
        rt = by_kind(str(ref.get("kind", "")))
        target = self.api.store.get(rt.kind, key[0], str(ref.get("name", ""))) if rt else None
        if rt is None or target is None or "scale" not in rt.subresources:
            conditions = set_condition(
                conditions,
                "AbleToScale",
                "False",
                "FailedGetScale",
                f"the HPA controller was unable to get the target's current scale: "
                f'{str(ref.get("kind", "")).lower()}s "{ref.get("name", "")}" not found',
                now=stamp,
            )
            status.update(currentReplicas=0, desiredReplicas=0, conditions=conditions)
            write_status(
                self.api, "HorizontalPodAutoscaler", hpa, status, manager=CONTROLLER_MANAGER
            )
            return
        current = int(get_path(target.obj, "spec", "replicas", default=1))
        low, high = int(spec.get("minReplicas", 1)), int(spec.get("maxReplicas", 1))
        desired = min(max(current, low), high)
        conditions = set_condition(
            conditions,
            "AbleToScale",
            "True",
            "ReadyForNewScale",
            "recommended size matches current size",
            now=stamp,
        )
        conditions = set_condition(
            conditions,
            "ScalingActive",
            "False",
            "FailedGetResourceMetric",
            "the HPA was unable to compute the replica count: failed to get cpu utilization: "
            "unable to get metrics for resource cpu: no metrics returned from resource metrics "
            "API",
            now=stamp,
        )
        if desired != current:
            reason = (
                "Current number of replicas above Spec.MaxReplicas"
                if current > high
                else "Current number of replicas below Spec.MinReplicas"
            )
            try:
                scale_api.update_scale(
                    self.api,
                    rt,
                    key[0],
                    str(ref.get("name")),
                    {"spec": {"replicas": desired}},
                    manager="horizontal-pod-autoscaler",
                )
            except ApiError:
                return
            self.api.events.record(
                involved=hpa,
                reason="SuccessfulRescale",
                message=f"New size: {desired}; reason: {reason}",
                component="horizontal-pod-autoscaler",
            )
            status["lastScaleTime"] = stamp
        status.update(
            currentReplicas=int(get_path(target.obj, "status", "replicas", default=0)),
            desiredReplicas=desired,
            conditions=conditions,
            observedGeneration=int(hpa["metadata"].get("generation", 1)),
        )
        write_status(self.api, "HorizontalPodAutoscaler", hpa, status, manager=CONTROLLER_MANAGER)
        self.queue.add_after(key, now + self.period)


class EventExpiry:
    name = "event-ttl"
    period = timedelta(minutes=1)

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self._next: datetime | None = None

    def on_change(self, change: Change) -> None:
        del change

    def sync(self, now: datetime) -> bool:
        if self._next is not None and now < self._next:
            return False
        self._next = now + self.period
        self.api.events.expire(now)
        return False


__all__ = ["EventExpiry", "HorizontalPodAutoscalerController", "VolumeBinder", "rt_of"]
