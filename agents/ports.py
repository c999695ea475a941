"""Ports: what the incident brain needs from the outside world, named by capability.

Adapters (in `agents/adapters/`, and the lab's in-process stand-ins) implement these. Nothing
here knows an SDK: arguments and results are our own types, and failures are the errors of
`agents.errors`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from agents.model import (
    Alert,
    ConfigMapInfo,
    EventRecord,
    GoldenSignals,
    KubeObject,
    NodeInfo,
    ObjectList,
    ObjectRef,
    PodState,
    QuotaInfo,
    RevisionInfo,
    Series,
    ServiceInfo,
    WorkloadState,
)


class Clock(Protocol):
    """Time as the agents see it. The lab's clock may run faster than the wall clock, or be
    stepped by the bench; code that waits must wait through `sleep`, never `time.sleep`."""

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class ClusterReader(Protocol):
    """Scoped, bounded, read-only access to one cluster. Detection and diagnosis get only this."""

    @property
    def cluster_name(self) -> str: ...

    def get(self, ref: ObjectRef) -> KubeObject:
        """The live object. Raises `agents.errors.NotFound`."""
        ...

    def list_objects(
        self, *, api_version: str, kind: str, namespace: str | None, label_selector: str = ""
    ) -> Sequence[KubeObject]: ...

    def pods(self, namespace: str, *, label_selector: str = "") -> Sequence[PodState]: ...

    def workloads(self, namespace: str) -> Sequence[WorkloadState]: ...

    def events(self, namespace: str, *, limit: int = 200) -> Sequence[EventRecord]: ...

    def pod_logs(
        self,
        namespace: str,
        pod: str,
        *,
        container: str | None = None,
        tail_lines: int = 50,
        previous: bool = False,
    ) -> Sequence[str]: ...

    def services(self, namespace: str) -> Sequence[ServiceInfo]: ...

    def config_maps(self, namespace: str) -> Sequence[ConfigMapInfo]: ...

    def nodes(self) -> Sequence[NodeInfo]: ...

    def quotas(self, namespace: str) -> Sequence[QuotaInfo]: ...

    def rollout_history(self, namespace: str, deployment: str) -> Sequence[RevisionInfo]: ...

    def namespaces(self) -> Sequence[str]: ...


class ClusterWriter(Protocol):
    """The only way anything writes to a cluster. Only the transaction engine holds one."""

    def replace(
        self, obj: KubeObject, *, dry_run: bool = False, field_manager: str = "stratus"
    ) -> KubeObject:
        """PUT with optimistic concurrency: `obj` carries the resourceVersion it was read at.
        Raises `Conflict` when the object changed since, `Invalid` when the server refuses it."""
        ...

    def create(
        self, obj: KubeObject, *, dry_run: bool = False, field_manager: str = "stratus"
    ) -> KubeObject: ...

    def delete(
        self, ref: ObjectRef, *, dry_run: bool = False, resource_version: str | None = None
    ) -> None: ...


class ChangeWatcher(Protocol):
    """Lists and streams object changes for the change journal (list, then watch from the
    list's resourceVersion, as client-go's reflector does)."""

    def list_for_watch(self, *, api_version: str, kind: str, namespace: str) -> ObjectList:
        """Every object of `kind` in `namespace`, with the list's resourceVersion."""
        ...

    def watch(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str,
        resource_version: str | None,
        timeout_seconds: int,
    ) -> Iterator[tuple[str, KubeObject]]:
        """Yields (ADDED | MODIFIED | DELETED | BOOKMARK, object) until the server ends the
        watch (bookmarks are asked for; a BOOKMARK's object carries only a resourceVersion).
        A resourceVersion older than the server's history raises `Expired`."""
        ...


class MetricsSource(Protocol):
    """Golden signals, firing alerts and raw queries for one cluster's services."""

    def golden_signals(
        self, namespace: str, services: Sequence[str] | None = None, *, window_s: int = 60
    ) -> Mapping[str, GoldenSignals]: ...

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Alert]: ...

    def series(
        self, namespace: str, service: str, signal: str, *, start: datetime, end: datetime
    ) -> Sequence[Series]:
        """`signal` is one of request_rate | error_ratio | latency_p99_ms."""
        ...

    def call_graph(self, namespace: str, *, window_s: int = 300) -> Sequence[tuple[str, str]]:
        """Observed (caller, callee) service pairs, from client-side request metrics. Empty
        when the source has no such metrics; diagnosis then falls back on configuration."""
        ...

    def query(self, promql: str) -> Sequence[Series]:
        """An arbitrary instant query (for the Claude reasoner's tool). Raises `QueryError`
        quoting the query when the source refuses it."""
        ...
