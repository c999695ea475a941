"""`ClusterCache`: the read port (`ClusterReader`) served from watches, like client-go informers.

The scan, diagnosis and planning read whole namespaces (every pod, every event) again and
again; listing them from the API server each time cost 285 requests and 34 MB a minute at
2,000 pods. Here each (kind, namespace) the readers ask for gets one store, filled by one list
and kept current by one watch (`agents.cache.reflector`), started on the first read of that
namespace (or by `start`). Reads of a synced store cost the server nothing; what a store
cannot answer goes to the server:

- `get` (a single fresh object: the writer's read before a write, previews, restores),
  `pod_logs`, `nodes`, `quotas`, `namespaces` and kinds the cache does not hold;
- any read of a store that is not synced: before its first list has landed, and from any
  break of its watch until the list after it (a store never answers from data that may have
  missed changes it was told about; see `Sink.lost`);
- label selectors other than equality (`a=b`, `a!=b`, `a`, `!a`).

Staleness: a synced store lags the server by the watch's delivery time (milliseconds on a
healthy connection). That is fine for detection and diagnosis; it is not read-your-writes, so
the transaction engine and its validation keep reading the live cluster (`bot.services`
wires them so), and anything that must see its own write uses `get`.

Memory: a store keeps each object as compact JSON (`_Packed`) and parses it on every read.
Parsed bodies cost about ten times their JSON in Python objects: 2,000 pods and their events
held 68 MB as dicts, and the bot's memory goal at 2,000 pods is 200 MB in all. Parsing on read
costs less than the deep copy that reads made before (tens of milliseconds for a 2,000-pod
namespace), selected reads parse only what their labels select, and every object handed out
is the caller's own.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from agents import kubeparse
from agents.cache.reflector import Reflection, Sink, reflect
from agents.model import (
    ConfigMapInfo,
    EventRecord,
    JsonObject,
    KubeObject,
    NodeInfo,
    ObjectList,
    ObjectRef,
    PodState,
    QuotaInfo,
    RevisionInfo,
    ServiceInfo,
    WorkloadState,
)
from agents.ports import ChangeWatcher, ClusterReader

logger = logging.getLogger(__name__)

#: Backoff jitter from a private generator: the module's global one is shared with every
#: other thread (and Hypothesis, in the tests, treats a change to it as a strategy bug).
_JITTER = random.Random()

#: The kinds held, by kind: their API version. What the scan, diagnosis and planning list.
CACHED_KINDS: dict[str, str] = {
    "Pod": "v1",
    "Event": "v1",
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Service": "v1",
    "Endpoints": "v1",
    "ConfigMap": "v1",
}


#: Kinds stored without `metadata.managedFields` (Events also without what `EVENT_FIELDS`
#: does not name), which no cached read uses (only the change
#: journal reads them, for its own kinds, and snapshots come from a live `get`): on a pod they
#: are often a third of the object, and a big namespace holds thousands of pods and events.
LEAN_KINDS = frozenset({"Pod", "Event", "Endpoints", "ReplicaSet"})


#: What of an Event the cache keeps: what `kubeparse.parse_event` reads, and the metadata
#: that names it. Events are the most numerous objects of a busy namespace (7,500 beside
#: 2,000 pods in the lab) and their source, reporting fields, uids and series are read by
#: nothing; dropping them saves about a third of the events' memory.
EVENT_FIELDS = (
    "involvedObject",
    "reason",
    "message",
    "type",
    "count",
    "lastTimestamp",
    "eventTime",
)
EVENT_METADATA = ("name", "namespace", "resourceVersion", "creationTimestamp")
EVENT_INVOLVED = ("kind", "name")


def _lean(obj: KubeObject, kind: str) -> KubeObject:
    body = obj.body
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        return obj
    if kind == "Event":  # list items carry no `kind`: the store knows it
        involved = body.get("involvedObject")
        kept = {k: body[k] for k in EVENT_FIELDS if k in body}
        if isinstance(involved, dict):
            kept["involvedObject"] = {k: involved[k] for k in EVENT_INVOLVED if k in involved}
        kept["metadata"] = {k: meta[k] for k in EVENT_METADATA if k in meta}
        return KubeObject(kept)
    if "managedFields" not in meta:
        return obj
    return KubeObject({**body, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}})


@dataclass(frozen=True, slots=True)
class _Packed:
    """One stored object: its name and labels (what reads select on) and its body as compact
    JSON."""

    name: str
    labels: JsonObject
    data: bytes

    def unpack(self) -> KubeObject:
        body = json.loads(self.data)
        return KubeObject(body if isinstance(body, dict) else {})


def _pack(obj: KubeObject, lean: str | None) -> _Packed:
    if lean is not None:
        obj = _lean(obj, lean)
    # ASCII with escapes, not UTF-8: a body may hold a lone surrogate ("\ud800" in the
    # server's JSON parses to one), which UTF-8 cannot encode; escaped, it comes back intact.
    data = json.dumps(obj.body, separators=(",", ":")).encode("ascii")
    return _Packed(obj.name, _labels(obj), data)


LabelPredicate = Callable[[JsonObject], bool]


class WatchableCluster(ClusterReader, ChangeWatcher, Protocol):
    """A live cluster the cache reads through and watches (`KubernetesCluster`)."""


class _Store:
    """The objects of one kind in one namespace, as the watch last told them, and the other
    sinks that follow the same watch (the change journal)."""

    def __init__(self, *, lean: str | None = None) -> None:
        self._lean = lean  # the kind, when its objects are stored lean
        self._lock = threading.Lock()
        self._objects: dict[str, _Packed] = {}
        self._synced = False
        self._subscribers: list[Sink] = []
        self.changed = threading.Condition(self._lock)

    def replace(self, items: Sequence[KubeObject], resource_version: str | None) -> None:
        stored = {o.name: _pack(o, self._lean) for o in items}
        with self._lock:
            self._objects = stored
            self._synced = True
            self.changed.notify_all()
            subscribers = list(self._subscribers)
        # Outside the lock (readers need not wait for the journal's database), in the
        # reflector's thread, so every subscriber hears the events in order.
        for sink in subscribers:
            sink.replace(items, resource_version)

    def apply(self, event_type: str, obj: KubeObject) -> None:
        with self._lock:
            if event_type == "DELETED":
                self._objects.pop(obj.name, None)
            elif event_type in ("ADDED", "MODIFIED"):
                self._objects[obj.name] = _pack(obj, self._lean)
            # BOOKMARK: the resume point moves, no object changes
            self.changed.notify_all()
            subscribers = list(self._subscribers)
        for sink in subscribers:
            sink.apply(event_type, obj)

    def lost(self) -> None:
        with self._lock:
            self._synced = False
            subscribers = list(self._subscribers)
        for sink in subscribers:
            sink.lost()

    def subscribe(self, sink: Sink) -> None:
        """`sink` hears every list and event from now on; when the store already holds a
        list, it hears that first (a replay is harmless to the journal: it records only
        differences)."""
        with self._lock:
            self._subscribers.append(sink)
            current = [self._objects[n] for n in sorted(self._objects)] if self._synced else None
        if current is not None:
            sink.replace([p.unpack() for p in current], None)

    def unsubscribe(self, sink: Sink) -> None:
        with self._lock:
            self._subscribers = [s for s in self._subscribers if s is not sink]

    def items(self, selected: LabelPredicate | None = None) -> list[KubeObject] | None:
        """Every object whose labels `selected` accepts (all without it), in name order (the
        server's), each freshly parsed; None while not synced."""
        with self._lock:
            if not self._synced:
                return None
            packed = [self._objects[name] for name in sorted(self._objects)]
        # Parsed outside the lock: the reflector's thread need not wait for a reader.
        return [p.unpack() for p in packed if selected is None or selected(p.labels)]

    @property
    def synced(self) -> bool:
        with self._lock:
            return self._synced

    def wait_synced(self, timeout_s: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self._synced, timeout_s)


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheSettings:
    timeout_s: int = 300  # of each watch request: idle cost is one request per store per this
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0


class ClusterCache:
    """A `ClusterReader` over `source`, answering list reads from watch-fed stores."""

    def __init__(
        self,
        source: WatchableCluster,
        *,
        settings: CacheSettings | None = None,
        jitter: Callable[[], float] = _JITTER.random,
        sink_errors: tuple[type[Exception], ...] = (),
    ) -> None:
        """`sink_errors`: what subscribers may raise to have an event delivered again (the
        journal's `StorageError`); see `subscribe`."""
        self._source = source
        self._sink_errors = sink_errors
        self._settings = settings or CacheSettings()
        self._jitter = jitter
        self._stores: dict[tuple[str, str], _Store] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()

    # ------------------------------------------------------------------------ lifecycle

    def start(self, namespaces: Sequence[str]) -> None:
        """Start every store of `namespaces` now, so the first reads find them synced."""
        for namespace in namespaces:
            for kind in CACHED_KINDS:
                self._store(kind, namespace)

    def close(self, timeout_s: float = 1.0) -> None:
        """Stop the watches. A thread blocked in a watch ends when the server ends it; the
        threads are daemons, so one still waiting never holds the process open."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout_s / max(1, len(self._threads)))

    def synced(self, namespace: str) -> bool:
        """Whether every store of `namespace` has been started and is synced."""
        with self._lock:
            stores = [self._stores.get((k, namespace)) for k in CACHED_KINDS]
        return all(s is not None and s.synced for s in stores)

    def wait_synced(self, namespace: str, timeout_s: float) -> bool:
        """Start `namespace`'s stores and wait until all are synced (start-up, tests)."""
        self.start([namespace])
        deadline = time.monotonic() + timeout_s
        return all(
            self._store(kind, namespace).wait_synced(max(0.0, deadline - time.monotonic()))
            for kind in CACHED_KINDS
        )

    def subscribe(self, kind: str, namespace: str, sink: Sink) -> None:
        """Let `sink` follow the store of (`kind`, `namespace`) — its lists, events and breaks
        — so that one watch serves both (the change journal follows the cache's watches
        instead of opening its own). Starts the store if it was not running. A sink error
        listed in `sink_errors` makes the reflector resume from the last event the sink took:
        the store takes the replayed events again, which changes nothing."""
        self._store(kind, namespace, subscriber=sink)

    def unsubscribe(self, kind: str, namespace: str, sink: Sink) -> None:
        with self._lock:
            store = self._stores.get((kind, namespace))
        if store is not None:
            store.unsubscribe(sink)

    def _store(self, kind: str, namespace: str, *, subscriber: Sink | None = None) -> _Store:
        key = (kind, namespace)
        with self._lock:
            store = self._stores.get(key)
            if store is not None or self._stop.is_set():
                store = store or _Store()
                if subscriber is not None:
                    store.subscribe(subscriber)
                return store
            store = self._stores[key] = _Store(lean=kind if kind in LEAN_KINDS else None)
            if subscriber is not None:
                store.subscribe(subscriber)  # before the thread starts: it hears the first list
            s = self._settings
            spec = Reflection(
                api_version=CACHED_KINDS[kind],
                kind=kind,
                namespace=namespace,
                timeout_s=s.timeout_s,
                backoff_s=s.backoff_s,
                max_backoff_s=s.max_backoff_s,
                relist_after_break=True,
                sink_errors=self._sink_errors,
            )
            thread = threading.Thread(
                target=reflect,
                args=(self._source, store, spec, self._stop, self._jitter),
                name=f"cache-{kind.lower()}-{namespace}",
                daemon=True,
            )
            self._threads.append(thread)
        thread.start()
        return store

    def _cached(
        self, kind: str, namespace: str | None, selected: LabelPredicate | None = None
    ) -> list[KubeObject] | None:
        """The store's objects (those `selected` accepts), or None when the caller must read
        live."""
        if namespace is None or kind not in CACHED_KINDS:
            return None
        return self._store(kind, namespace).items(selected)

    # ---------------------------------------------------------------------------- reads

    @property
    def cluster_name(self) -> str:
        return self._source.cluster_name

    def get(self, ref: ObjectRef) -> KubeObject:
        return self._source.get(ref)  # a single fresh object always comes from the server

    def list_objects(
        self, *, api_version: str, kind: str, namespace: str | None, label_selector: str = ""
    ) -> Sequence[KubeObject]:
        selector = _selector(label_selector)
        found = None
        if selector is not None and CACHED_KINDS.get(kind) == api_version:
            found = self._cached(kind, namespace, selector)
        if found is None:
            return self._source.list_objects(
                api_version=api_version,
                kind=kind,
                namespace=namespace,
                label_selector=label_selector,
            )
        return found  # freshly parsed: the caller's own

    def pods(self, namespace: str, *, label_selector: str = "") -> Sequence[PodState]:
        selector = _selector(label_selector)
        found = self._cached("Pod", namespace, selector) if selector is not None else None
        if found is None:
            return self._source.pods(namespace, label_selector=label_selector)
        return [kubeparse.parse_pod(o.body) for o in found]

    def workloads(self, namespace: str) -> Sequence[WorkloadState]:
        deployments = self._cached("Deployment", namespace)
        stateful_sets = self._cached("StatefulSet", namespace)
        if deployments is None or stateful_sets is None:
            return self._source.workloads(namespace)
        return [kubeparse.parse_workload(o.body) for o in deployments + stateful_sets]

    def events(self, namespace: str, *, limit: int = 200) -> Sequence[EventRecord]:
        found = self._cached("Event", namespace)
        if found is None:
            return self._source.events(namespace, limit=limit)
        return kubeparse.newest_events((kubeparse.parse_event(o.body) for o in found), limit)

    def pod_logs(
        self,
        namespace: str,
        pod: str,
        *,
        container: str | None = None,
        tail_lines: int = 50,
        previous: bool = False,
    ) -> Sequence[str]:
        return self._source.pod_logs(
            namespace, pod, container=container, tail_lines=tail_lines, previous=previous
        )

    def services(self, namespace: str) -> Sequence[ServiceInfo]:
        services = self._cached("Service", namespace)
        endpoints = self._cached("Endpoints", namespace)
        if services is None or endpoints is None:
            return self._source.services(namespace)
        by_name = {o.name: o.body for o in endpoints}
        return [
            kubeparse.parse_service(o.body, kubeparse.ready_endpoint_count(by_name.get(o.name)))
            for o in services
        ]

    def config_maps(self, namespace: str) -> Sequence[ConfigMapInfo]:
        found = self._cached("ConfigMap", namespace)
        if found is None:
            return self._source.config_maps(namespace)
        return [kubeparse.parse_config_map(o.body) for o in found]

    def nodes(self) -> Sequence[NodeInfo]:
        return self._source.nodes()

    def quotas(self, namespace: str) -> Sequence[QuotaInfo]:
        return self._source.quotas(namespace)

    def rollout_history(self, namespace: str, deployment: str) -> Sequence[RevisionInfo]:
        if not self._store("ReplicaSet", namespace).synced:
            return self._source.rollout_history(namespace, deployment)
        live = self.get(
            ObjectRef(
                api_version="apps/v1", kind="Deployment", name=deployment, namespace=namespace
            )
        )
        spec = live.body.get("spec") or {}
        wanted = (spec.get("selector") or {}).get("matchLabels") or {}
        replica_sets = self._cached(
            "ReplicaSet",
            namespace,
            lambda labels: all(labels.get(k) == v for k, v in wanted.items()),
        )
        if replica_sets is None:  # the store broke between the two reads
            return self._source.rollout_history(namespace, deployment)
        return kubeparse.parse_revisions(live, replica_sets)

    def namespaces(self) -> Sequence[str]:
        return self._source.namespaces()

    # ------------------------------------------------------------- watch, passed through

    def list_for_watch(self, *, api_version: str, kind: str, namespace: str) -> ObjectList:
        return self._source.list_for_watch(api_version=api_version, kind=kind, namespace=namespace)

    def watch(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str,
        resource_version: str | None,
        timeout_seconds: int,
    ) -> Iterator[tuple[str, KubeObject]]:
        return self._source.watch(
            api_version=api_version,
            kind=kind,
            namespace=namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
        )


def _labels(obj: KubeObject) -> JsonObject:
    labels = (obj.body.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _selector(text: str) -> LabelPredicate | None:
    """An equality-based label selector as a predicate; None for one this cache does not
    evaluate (set-based `in`/`notin`), which then goes to the server."""
    requirements: list[tuple[str, str, str]] = []  # (key, operator, value)
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        if "(" in part:
            return None
        if "!=" in part:
            key, _, value = part.partition("!=")
            requirements.append((key.strip(), "!=", value.strip()))
        elif "=" in part:
            key, _, value = part.replace("==", "=").partition("=")
            requirements.append((key.strip(), "=", value.strip()))
        elif part.startswith("!"):
            requirements.append((part[1:].strip(), "absent", ""))
        elif " " not in part:
            requirements.append((part, "present", ""))
        else:
            return None

    def matches(labels: JsonObject) -> bool:
        for key, operator, value in requirements:
            have = labels.get(key)
            if operator == "=" and have != value:
                return False
            if operator == "!=" and have == value:
                return False
            if operator == "absent" and key in labels:
                return False
            if operator == "present" and key not in labels:
                return False
        return True

    return matches
