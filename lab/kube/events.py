"""Events: what controllers and the kubelet model say about objects, as the real components
say it.

A repeated event (same object, reason, message, type and source) bumps `count` and
`lastTimestamp` on the existing Event instead of creating another, so a crash-looping pod
yields one BackOff event with a growing count, not an unbounded list. Events expire after an
hour of lab time, as the real server's TTL does.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agents.model import JsonObject
from lab.kube.jsonutil import micro_time, parse_time, rfc3339

if TYPE_CHECKING:
    from lab.kube.api import KubeApi


EVENT_TTL = timedelta(hours=1)
MAX_MESSAGE = 1024

_Key = tuple[str, str, str, str, str, str, str, str, str]


class EventRecorder:
    def __init__(self, api: KubeApi) -> None:
        self._api = api
        self._index: dict[_Key, str] = {}
        self._sequence = 0
        self._lock = threading.Lock()

    def record(
        self,
        *,
        involved: JsonObject,
        reason: str,
        message: str,
        type: str = "Normal",
        component: str = "lab",
        field_path: str = "",
        host: str = "",
    ) -> None:
        meta = involved.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        message = message[:MAX_MESSAGE]
        key: _Key = (
            namespace,
            str(meta.get("uid", "")),
            str(involved.get("kind", "")),
            str(meta.get("name", "")),
            field_path,
            reason,
            message,
            type,
            component,
        )
        now = self._api.clock.now()
        store = self._api.store
        with store.lock:
            if store.get("Namespace", "", namespace) is None:
                return
            name = self._index.get(key)
            existing = store.get("Event", namespace, name) if name else None
            if existing is not None:
                event = {**existing.obj, "metadata": dict(existing.obj["metadata"])}
                event["count"] = int(event.get("count", 1)) + 1
                event["lastTimestamp"] = rfc3339(now)
                store.put("Event", event, existing.obj)
                return
            name = self._new_name(str(meta.get("name", "")), namespace, now)
            reference: JsonObject = {
                "kind": involved.get("kind", ""),
                "namespace": meta.get("namespace", ""),
                "name": meta.get("name", ""),
                "uid": meta.get("uid", ""),
                "apiVersion": involved.get("apiVersion", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            }
            if field_path:
                reference["fieldPath"] = field_path
            if not reference["namespace"]:
                del reference["namespace"]
            source: JsonObject = {"component": component}
            if host:
                source["host"] = host
            event = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": self._api.ids.uid(),
                    "creationTimestamp": rfc3339(now),
                },
                "involvedObject": reference,
                "reason": reason,
                "message": message,
                "source": source,
                "firstTimestamp": rfc3339(now),
                "lastTimestamp": rfc3339(now),
                "count": 1,
                "type": type,
                "reportingComponent": component,
                "reportingInstance": host,
            }
            store.put("Event", event, None)
            self._index[key] = name

    def _new_name(self, base: str, namespace: str, now: datetime) -> str:
        with self._lock:
            self._sequence += 1
            nanos = int(now.timestamp() * 1e9) + self._sequence
        return f"{base}.{nanos:x}"

    def expire(self, now: datetime) -> None:
        """Delete events not seen for an hour."""
        store = self._api.store
        cutoff = now - EVENT_TTL
        with store.lock:
            for event in list(store.iter_objects("Event")):
                last = parse_time(event.get("lastTimestamp")) or parse_time(
                    event["metadata"].get("creationTimestamp")
                )
                if last is not None and last < cutoff:
                    meta = event["metadata"]
                    store.remove("Event", meta["namespace"], meta["name"])
            self._index = {
                key: name
                for key, name in self._index.items()
                if store.get("Event", key[0], name) is not None
            }


def to_events_v1(event: JsonObject) -> JsonObject:
    """The events.k8s.io/v1 view of a core Event."""
    first = event.get("firstTimestamp") or event["metadata"].get("creationTimestamp")
    out: JsonObject = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": event["metadata"],
        "eventTime": event.get("eventTime") or _micro(first),
        "reportingController": event.get("reportingComponent")
        or (event.get("source") or {}).get("component", ""),
        "reportingInstance": event.get("reportingInstance", ""),
        "action": event.get("action", ""),
        "reason": event.get("reason", ""),
        "regarding": event.get("involvedObject", {}),
        "note": event.get("message", ""),
        "type": event.get("type", ""),
        "deprecatedSource": event.get("source", {}),
        "deprecatedFirstTimestamp": event.get("firstTimestamp"),
        "deprecatedLastTimestamp": event.get("lastTimestamp"),
        "deprecatedCount": event.get("count", 0),
    }
    if event.get("related"):
        out["related"] = event["related"]
    return {k: v for k, v in out.items() if v is not None}


def _micro(text: str | None) -> str:
    moment = parse_time(text)
    return micro_time(moment) if moment else "1970-01-01T00:00:00.000000Z"
