"""PodDisruptionBudgets: the disruption controller's status and the eviction subresource.

`kubectl drain` does not delete pods: it POSTs a policy/v1 `Eviction` to each pod's
`eviction` subresource, and the API server grants it only if every budget covering the pod
allows one more disruption. The disruption controller keeps `status.disruptionsAllowed`
(currentHealthy − desiredHealthy, never negative) up to date from the Ready pods the budget's
selector matches; a granted eviction spends one at once (the pod lands in `disruptedPods`) so
two concurrent evictions cannot both pass. A refusal is a 429 worded as the real server words
it, which kubectl drain reports and retries.

Simplifications: expectedPods counts the pods the selector matches (the real controller asks
their controllers' scale), which is the same for the Deployments the lab runs; percentages
round up as the real one does; the unhealthy-pod eviction policy is the default
(IfHealthyBudget: a pod that is not Ready may always be evicted).
"""

from __future__ import annotations

import math
from datetime import datetime

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.controllers.base import (
    CONTROLLER_MANAGER,
    WorkQueue,
    pod_active,
    pod_ready,
    rt_of,
    run_keys,
    set_condition,
    write_status,
)
from lab.kube.errors import InternalError, TooManyRequests
from lab.kube.jsonutil import copy_obj, get_path, rfc3339
from lab.kube.selectors import from_label_selector
from lab.kube.store import Change

KIND = "PodDisruptionBudget"


def _covering(api: KubeApi, pod: JsonObject) -> list[JsonObject]:
    namespace = pod["metadata"].get("namespace", "")
    labels = pod["metadata"].get("labels") or {}
    out = []
    for pdb in api.list(KIND, namespace):
        selector = get_path(pdb, "spec", "selector")
        if selector is not None and from_label_selector(selector).matches(labels):
            out.append(pdb)
    return out


def _count(value: object, total: int) -> int:
    """An IntOrString budget field as a pod count (percentages round up, as the real one)."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(str(value))


def budget_status(api: KubeApi, pdb: JsonObject, now: datetime) -> JsonObject:
    """What the disruption controller writes: healthy, desired and allowed counts."""
    namespace = pdb["metadata"].get("namespace", "")
    selector = from_label_selector(get_path(pdb, "spec", "selector") or {})
    pods = [
        p
        for p in api.list("Pod", namespace)
        if pod_active(p) and selector.matches(p["metadata"].get("labels") or {})
    ]
    expected = len(pods)
    healthy = sum(1 for p in pods if pod_ready(p))
    spec = pdb.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _count(spec["maxUnavailable"], expected))
    elif spec.get("minAvailable") is not None:
        desired = _count(spec["minAvailable"], expected)
    else:
        desired = expected  # neither set: the server defaults minAvailable to 1; rare
    old = pdb.get("status") or {}
    # An eviction granted moments ago is not in the pod counts yet: keep it spent.
    pending = dict(old.get("disruptedPods") or {})
    pending = {
        name: stamp
        for name, stamp in pending.items()
        if any(p["metadata"]["name"] == name and pod_ready(p) for p in pods)
    }
    allowed = max(0, healthy - desired - len(pending))
    conditions = set_condition(
        list(old.get("conditions") or []),
        "DisruptionAllowed",
        "True" if allowed > 0 else "False",
        "SufficientPods" if allowed > 0 else "InsufficientPods",
        "",
        now=rfc3339(now),
    )
    status: JsonObject = {
        "observedGeneration": int(pdb["metadata"].get("generation", 1)),
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": conditions,
    }
    if pending:
        status["disruptedPods"] = pending
    return status


def evict(api: KubeApi, namespace: str, name: str, now: datetime) -> None:
    """Grant or refuse an eviction of pod `namespace/name`, deleting the pod when granted.
    Raises `TooManyRequests` (429) when a budget forbids it, as the real server does."""
    with api.store.lock:
        _evict(api, namespace, name, now)


def _evict(api: KubeApi, namespace: str, name: str, now: datetime) -> None:
    pod = api.read(rt_of("Pod"), namespace, name).obj
    budgets = _covering(api, pod)
    if len(budgets) > 1:
        raise InternalError(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support."
        )
    # A pod that is not Ready (or already going) costs no healthy replica: always evictable.
    if budgets and pod_ready(pod) and not pod["metadata"].get("deletionTimestamp"):
        pdb = budgets[0]
        status = budget_status(api, pdb, now)
        if int(status["disruptionsAllowed"]) <= 0:
            raise TooManyRequests(
                "Cannot evict pod as it would violate the pod's disruption budget.",
                causes=[
                    {
                        "reason": "DisruptionBudget",
                        "message": (
                            f"The disruption budget {pdb['metadata']['name']} needs "
                            f"{status['desiredHealthy']} healthy pods and has "
                            f"{status['currentHealthy']} currently"
                        ),
                    }
                ],
            )
        spent = copy_obj(status)
        spent["disruptedPods"] = {**(status.get("disruptedPods") or {}), name: rfc3339(now)}
        spent["disruptionsAllowed"] = int(status["disruptionsAllowed"]) - 1
        write_status(api, KIND, pdb, spent, manager=CONTROLLER_MANAGER)
    api.delete_object(rt_of("Pod"), namespace, name)


class DisruptionController:
    name = "disruption"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.type == "DELETED" and change.kind == KIND:
            return
        if change.kind == KIND:
            self.queue.add((change.namespace, change.name))
        elif change.kind == "Pod":
            for pdb in self.api.list(KIND, change.namespace):
                self.queue.add((change.namespace, pdb["metadata"]["name"]))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._sync(k, now))

    def _sync(self, key: tuple[str, str], now: datetime) -> None:
        stored = self.api.store.get(KIND, *key)
        if stored is None:
            return
        status = budget_status(self.api, stored.obj, now)
        write_status(self.api, KIND, stored.obj, status, manager=CONTROLLER_MANAGER)
