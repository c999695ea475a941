"""What every controller shares: a work queue of dirty keys with delayed re-queues in lab time,
and helpers for the objects they read and write.

Keys are processed in sorted order and delays are measured on the lab clock, so a stepped run
is deterministic: the same calls at the same lab times produce the same writes.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Protocol

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.errors import ApiError
from lab.kube.jsonutil import copy_obj, get_path, parse_time
from lab.kube.resources import ResourceType, by_kind
from lab.kube.store import Change

logger = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name)

#: The manager name controllers write under (managedFields, like the real binary's).
CONTROLLER_MANAGER = "kube-controller-manager"


class Controller(Protocol):
    name: str

    def on_change(self, change: Change) -> None:
        """Mark what `change` makes dirty (called under the store lock: keep it cheap)."""
        ...

    def sync(self, now: datetime) -> bool:
        """Process the keys due at `now`; return whether anything was processed."""
        ...


class WorkQueue:
    """Dirty keys, plus keys due again at a lab time (one pending timer per key: the
    earliest wins, so periodic re-queues never pile up)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dirty: dict[Key, None] = {}
        self._timers: list[tuple[float, int, Key]] = []
        self._scheduled: dict[Key, float] = {}
        self._sequence = 0

    def add(self, key: Key) -> None:
        with self._lock:
            self._dirty[key] = None

    def add_after(self, key: Key, due: datetime) -> None:
        stamp = due.timestamp()
        with self._lock:
            current = self._scheduled.get(key)
            if current is not None and current <= stamp:
                return
            self._scheduled[key] = stamp
            self._sequence += 1
            heapq.heappush(self._timers, (stamp, self._sequence, key))

    def pop_ready(self, now: datetime) -> list[Key]:
        with self._lock:
            stamp = now.timestamp()
            while self._timers and self._timers[0][0] <= stamp + 1e-9:
                due, _, key = heapq.heappop(self._timers)
                if self._scheduled.get(key) == due:
                    del self._scheduled[key]
                    self._dirty[key] = None
            keys = sorted(self._dirty)
            self._dirty.clear()
            return keys

    def next_due(self) -> float | None:
        with self._lock:
            return self._timers[0][0] if self._timers else None


def run_keys(name: str, keys: list[Key], handler: Callable[[Key], None]) -> bool:
    """Run `handler` per key; one failing object must not stop the others (logged)."""
    for key in keys:
        try:
            handler(key)
        except ApiError as e:
            logger.debug("%s: %s/%s: %s", name, key[0], key[1], e.message)
        except Exception:  # an outer boundary: a controller bug must not stop the cluster
            logger.exception("%s: reconciling %s/%s failed", name, key[0], key[1])
    return bool(keys)


def rt_of(kind: str) -> ResourceType:
    rt = by_kind(kind)
    assert rt is not None, kind
    return rt


def controller_of(obj: JsonObject | None) -> JsonObject | None:
    if obj is None:
        return None
    for ref in get_path(obj, "metadata", "ownerReferences", default=[]):
        if ref.get("controller"):
            return dict(ref)
    return None


def owner_ref(owner: JsonObject, *, controller: bool = True) -> JsonObject:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def owned_by(obj: JsonObject, uid: str) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == uid


def iter_owned(api: KubeApi, kind: str, namespace: str, uid: str) -> Iterator[JsonObject]:
    for obj in api.store.iter_objects(kind, namespace):
        if owned_by(obj, uid):
            yield obj


def condition(obj: JsonObject, kind: str) -> JsonObject | None:
    for c in get_path(obj, "status", "conditions", default=[]):
        if c.get("type") == kind:
            return dict(c)
    return None


def set_condition(
    conditions: list[JsonObject],
    kind: str,
    status: str,
    reason: str,
    message: str,
    *,
    now: str,
    update_time: bool = False,
) -> list[JsonObject]:
    """A copy of `conditions` with `kind` set; transition time moves only when the status
    changes (and lastUpdateTime, for conditions that carry it, when asked)."""
    out = [dict(c) for c in conditions]
    for c in out:
        if c.get("type") == kind:
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            changed = update_time or c.get("status") != status or c.get("reason") != reason
            if changed and "lastUpdateTime" in c:
                c["lastUpdateTime"] = now
            c.update(status=status, reason=reason, message=message)
            return out
    new = {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }
    out.append(new)
    return out


def pod_ready(pod: JsonObject) -> bool:
    c = condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def pod_available(pod: JsonObject, min_ready_s: int, now: datetime) -> bool:
    c = condition(pod, "Ready")
    if c is None or c.get("status") != "True":
        return False
    if min_ready_s <= 0:
        return True
    since = parse_time(c.get("lastTransitionTime"))
    return since is not None and (now - since).total_seconds() >= min_ready_s


def pod_active(pod: JsonObject) -> bool:
    """Counts towards a workload's replicas: not terminating, not finished."""
    if get_path(pod, "metadata", "deletionTimestamp"):
        return False
    return get_path(pod, "status", "phase", default="") not in ("Succeeded", "Failed")


def write_status(
    api: KubeApi, kind: str, obj: JsonObject, status: JsonObject, *, manager: str
) -> None:
    """Write `status` if it differs (the API drops no-op writes anyway)."""
    if obj.get("status") == status:
        return
    new = copy_obj(obj)
    new["status"] = status
    meta = obj["metadata"]
    api.update_object(
        rt_of(kind),
        meta.get("namespace", ""),
        meta["name"],
        new,
        manager=manager,
        subresource="status",
        internal=True,
    )


def write_object(
    api: KubeApi, kind: str, old: JsonObject, new: JsonObject, *, manager: str
) -> JsonObject:
    """Write a controller's change to an object's spec/metadata (and status, for pods)."""
    meta = old["metadata"]
    return api.update_object(
        rt_of(kind),
        meta.get("namespace", ""),
        meta["name"],
        new,
        manager=manager,
        subresource="*",
        internal=True,
    )
