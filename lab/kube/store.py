"""The object store: objects indexed by kind and namespace, one global resourceVersion, and
the change history that watches replay.

Stored objects are immutable by convention: a write replaces the dict, never edits it, so the
history and the cached JSON encoding of an object can share it safely. One re-entrant lock
guards every read-modify-write; the HTTP thread, the controller thread and in-process callers
all take it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from agents.model import JsonObject
from lab.kube.errors import Gone
from lab.kube.jsonutil import dumps


@dataclass(frozen=True, slots=True)
class Change:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    kind: str
    namespace: str
    name: str
    obj: JsonObject
    old: JsonObject | None


class Stored:
    """One object and, once asked for, its JSON encoding (lists join these)."""

    __slots__ = ("_raw", "obj")

    def __init__(self, obj: JsonObject) -> None:
        self.obj = obj
        self._raw: bytes | None = None

    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = dumps(self.obj)
        return self._raw


class Watcher(Protocol):
    def deliver(self, change: Change) -> None: ...


Listener = Callable[[Change], None]


class Store:
    def __init__(self, *, history_limit: int = 20_000) -> None:
        self.lock = threading.RLock()
        self._objects: dict[str, dict[str, dict[str, Stored]]] = {}
        self._rv = 0
        self._history: list[Change] = []
        self._history_floor = 0  # changes with rv <= floor are gone
        self._history_limit = history_limit
        self._watchers: dict[str, list[Watcher]] = {}
        self._listeners: list[Listener] = []

    # ------------------------------------------------------------------ reads

    @property
    def resource_version(self) -> int:
        return self._rv

    def get(self, kind: str, namespace: str, name: str) -> Stored | None:
        return self._objects.get(kind, {}).get(namespace, {}).get(name)

    def items(self, kind: str, namespace: str | None = None) -> list[Stored]:
        """Objects of `kind` (in `namespace`, or all), sorted by namespace then name as etcd
        keys sort."""
        by_namespace = self._objects.get(kind, {})
        if namespace is not None:
            bucket = by_namespace.get(namespace, {})
            return [bucket[n] for n in sorted(bucket)]
        out: list[Stored] = []
        for ns in sorted(by_namespace):
            bucket = by_namespace[ns]
            out.extend(bucket[n] for n in sorted(bucket))
        return out

    def iter_objects(self, kind: str, namespace: str | None = None) -> Iterator[JsonObject]:
        """Unsorted, uncopied objects for controllers (read-only by convention), as they were
        when the iteration started (other threads may write meanwhile)."""
        with self.lock:
            by_namespace = self._objects.get(kind, {})
            if namespace is not None:
                snapshot = [s.obj for s in by_namespace.get(namespace, {}).values()]
            else:
                snapshot = [s.obj for b in by_namespace.values() for s in b.values()]
        yield from snapshot

    def count(self, kind: str, namespace: str | None = None) -> int:
        with self.lock:
            by_namespace = self._objects.get(kind, {})
            if namespace is not None:
                return len(by_namespace.get(namespace, {}))
            return sum(len(b) for b in by_namespace.values())

    # ------------------------------------------------------------------ writes

    def put(self, kind: str, obj: JsonObject, old: JsonObject | None) -> JsonObject:
        """Store `obj` (a dict the store now owns) with a new resourceVersion."""
        with self.lock:
            self._rv += 1
            meta = obj["metadata"]
            meta["resourceVersion"] = str(self._rv)
            namespace = meta.get("namespace", "")
            name = meta["name"]
            self._objects.setdefault(kind, {}).setdefault(namespace, {})[name] = Stored(obj)
            self._record(
                Change(
                    self._rv,
                    "ADDED" if old is None else "MODIFIED",
                    kind,
                    namespace,
                    name,
                    obj,
                    old,
                )
            )
            return obj

    def remove(self, kind: str, namespace: str, name: str) -> JsonObject | None:
        """Delete an object; the DELETED change carries it with a new resourceVersion."""
        with self.lock:
            bucket = self._objects.get(kind, {}).get(namespace, {})
            stored = bucket.pop(name, None)
            if stored is None:
                return None
            if not bucket:
                self._objects[kind].pop(namespace, None)
            self._rv += 1
            final = {
                **stored.obj,
                "metadata": {**stored.obj["metadata"], "resourceVersion": str(self._rv)},
            }
            self._record(Change(self._rv, "DELETED", kind, namespace, name, final, stored.obj))
            return final

    def _record(self, change: Change) -> None:
        self._history.append(change)
        if len(self._history) > self._history_limit * 2:
            drop = len(self._history) - self._history_limit
            self._history_floor = self._history[drop - 1].rv
            del self._history[:drop]
        for listener in self._listeners:
            listener(change)
        for watcher in list(self._watchers.get(change.kind, ())):
            watcher.deliver(change)

    def compact(self) -> None:
        """Forget all history so far, as etcd compaction does (used after bootstrap)."""
        with self.lock:
            self._history.clear()
            self._history_floor = self._rv

    # ------------------------------------------------------------------ watch

    def add_listener(self, listener: Listener) -> None:
        with self.lock:
            self._listeners.append(listener)

    def subscribe(self, kind: str, watcher: Watcher, since: int | None) -> list[Change]:
        """Register `watcher` for changes of `kind`; with `since`, return the changes after it
        (raising `Gone` when they are no longer retained)."""
        with self.lock:
            replay: list[Change] = []
            if since is not None:
                if since < self._history_floor:
                    raise Gone(f"too old resource version: {since} ({self._history_floor + 1})")
                start = len(self._history) - (self._rv - since) if since < self._rv else None
                if start is not None:
                    replay = [c for c in self._history[max(start, 0) :] if c.kind == kind]
            self._watchers.setdefault(kind, []).append(watcher)
            return replay

    def unsubscribe(self, kind: str, watcher: Watcher) -> None:
        with self.lock:
            watchers = self._watchers.get(kind, [])
            if watcher in watchers:
                watchers.remove(watcher)
