"""Small in-test implementations of the ports (`ClusterReader`, `ChangeWatcher`,
`MetricsSource`) and a stored database, shared by the detection and journal tests."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agents.errors import ClusterError, MetricsError, NotFound
from agents.model import (
    Alert,
    AlertStatus,
    ConfigMapInfo,
    ContainerState,
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
from storage import Store
from storage.migrations import upgrade

T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def migrated_store(tmp_path: Path) -> Store:
    url = f"sqlite:///{tmp_path / 'stratus.db'}"
    upgrade(url)
    return Store.connect(url)


class FakeCluster:
    """A `ClusterReader` and `ChangeWatcher` over in-memory state the test sets."""

    def __init__(self, name: str = "lab") -> None:
        self.name = name
        self.pod_states: dict[str, list[PodState]] = {}
        self.workload_states: dict[str, list[WorkloadState]] = {}
        self.event_records: dict[str, list[EventRecord]] = {}
        self.objects: dict[tuple[str, str], dict[str, dict[str, object]]] = {}
        self.failing: set[str] = set()  # namespaces whose reads fail
        self.list_calls: list[tuple[str, str | None]] = []
        #: Scripted watch streams per (kind, namespace): each call pops the next script.
        self.watch_scripts: dict[
            tuple[str, str], list[Callable[[str | None], Iterator[tuple[str, KubeObject]]]]
        ] = {}
        self.watch_calls: list[tuple[str, str, str | None]] = []
        #: The resourceVersion a list of each kind reports (the store's, not an item's).
        self.list_versions: dict[str, str] = {}
        #: Rollout history per (namespace, Deployment).
        self.revisions: dict[tuple[str, str], list[RevisionInfo]] = {}

    # -- ClusterReader
    @property
    def cluster_name(self) -> str:
        return self.name

    def _check(self, namespace: str | None) -> None:
        if namespace in self.failing:
            raise ClusterError(f"reads of {namespace} fail")

    def get(self, ref: ObjectRef) -> KubeObject:
        body = self.objects.get((ref.kind, ref.namespace or ""), {}).get(ref.name)
        if body is None:
            raise NotFound(str(ref))
        return KubeObject(copy.deepcopy(body))

    def list_objects(
        self, *, api_version: str, kind: str, namespace: str | None, label_selector: str = ""
    ) -> Sequence[KubeObject]:
        if kind == "Secret":
            raise AssertionError("Secrets must never be read")
        self._check(namespace)
        self.list_calls.append((kind, namespace))
        found = self.objects.get((kind, namespace or ""), {})
        return [KubeObject(copy.deepcopy(b)) for _, b in sorted(found.items())]

    def pods(self, namespace: str, *, label_selector: str = "") -> Sequence[PodState]:
        self._check(namespace)
        return list(self.pod_states.get(namespace, []))

    def workloads(self, namespace: str) -> Sequence[WorkloadState]:
        self._check(namespace)
        return list(self.workload_states.get(namespace, []))

    def events(self, namespace: str, *, limit: int = 200) -> Sequence[EventRecord]:
        self._check(namespace)
        return list(self.event_records.get(namespace, []))[:limit]

    def pod_logs(
        self,
        namespace: str,
        pod: str,
        *,
        container: str | None = None,
        tail_lines: int = 50,
        previous: bool = False,
    ) -> Sequence[str]:
        return []

    def services(self, namespace: str) -> Sequence[ServiceInfo]:
        return []

    def config_maps(self, namespace: str) -> Sequence[ConfigMapInfo]:
        return []

    def nodes(self) -> Sequence[NodeInfo]:
        return []

    def quotas(self, namespace: str) -> Sequence[QuotaInfo]:
        return []

    def rollout_history(self, namespace: str, deployment: str) -> Sequence[RevisionInfo]:
        self._check(namespace)
        return list(self.revisions.get((namespace, deployment), []))

    def namespaces(self) -> Sequence[str]:
        return sorted({ns for ns in self.pod_states} | {ns for ns in self.workload_states})

    # -- ChangeWatcher
    def list_for_watch(self, *, api_version: str, kind: str, namespace: str) -> ObjectList:
        items = tuple(self.list_objects(api_version=api_version, kind=kind, namespace=namespace))
        return ObjectList(items=items, resource_version=self.list_versions.get(kind, "100"))

    def watch(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str,
        resource_version: str | None,
        timeout_seconds: int,
    ) -> Iterator[tuple[str, KubeObject]]:
        self.watch_calls.append((kind, namespace, resource_version))
        scripts = self.watch_scripts.get((kind, namespace), [])
        if not scripts:
            return iter(())
        return scripts.pop(0)(resource_version)


class FakeMetrics:
    """A `MetricsSource` with settable golden signals and firing alerts."""

    def __init__(self) -> None:
        self.signals: dict[str, dict[str, GoldenSignals]] = {}
        self.alerts: list[Alert] = []
        self.fail = False
        self.windows: list[int] = []

    def golden_signals(
        self, namespace: str, services: Sequence[str] | None = None, *, window_s: int = 60
    ) -> Mapping[str, GoldenSignals]:
        if self.fail:
            raise MetricsError("prometheus is down")
        self.windows.append(window_s)
        return dict(self.signals.get(namespace, {}))

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Alert]:
        if self.fail:
            raise MetricsError("prometheus is down")
        return [a for a in self.alerts if namespace is None or a.namespace == namespace]

    def series(
        self, namespace: str, service: str, signal: str, *, start: datetime, end: datetime
    ) -> Sequence[Series]:
        return []

    def call_graph(self, namespace: str, *, window_s: int = 300) -> Sequence[tuple[str, str]]:
        return []

    def query(self, promql: str) -> Sequence[Series]:
        return []


def alert(
    name: str = "HighErrorRate",
    *,
    fingerprint: str | None = None,
    namespace: str | None = "hotel",
    service: str | None = "frontend",
    severity: str = "warning",
    status: AlertStatus = AlertStatus.FIRING,
    starts_at: datetime = T0,
    ends_at: datetime | None = None,
    source: str = "alertmanager",
    **labels: str,
) -> Alert:
    all_labels = {"alertname": name, "severity": severity, **labels}
    if namespace is not None:
        all_labels["namespace"] = namespace
    if service is not None:
        all_labels["service"] = service
    return Alert(
        fingerprint=fingerprint or f"{name}-{namespace}-{service}",
        name=name,
        status=status,
        labels=all_labels,
        annotations={"summary": f"{name} on {service}"},
        starts_at=starts_at,
        ends_at=ends_at,
        source=source,
    )


def pod(
    name: str,
    *,
    namespace: str = "hotel",
    app: str = "geo",
    ready: bool = True,
    phase: str = "Running",
    restarts: int = 0,
    state: str = "running",
    reason: str | None = None,
    last_reason: str | None = None,
    unschedulable: str | None = None,
) -> PodState:
    return PodState(
        name=name,
        namespace=namespace,
        phase=phase,
        ready=ready,
        node=None if unschedulable else "node-1",
        labels={"app": app},
        owner=f"ReplicaSet/{app}-5d9c7f",
        containers=(
            ContainerState(
                name=app,
                image=f"hotel/{app}:1.0",
                ready=ready,
                restart_count=restarts,
                state=state,
                reason=reason,
                last_terminated_reason=last_reason,
            ),
        ),
        unschedulable_message=unschedulable,
    )


def workload(
    name: str, *, namespace: str = "hotel", replicas: int = 1, available: int | None = None
) -> WorkloadState:
    avail = replicas if available is None else available
    return WorkloadState(
        kind="Deployment",
        name=name,
        namespace=namespace,
        replicas=replicas,
        ready_replicas=avail,
        available_replicas=avail,
        updated_replicas=replicas,
        generation=1,
        observed_generation=1,
        selector={"app": name},
        images={name: f"hotel/{name}:1.0"},
    )


def signals(
    service: str, *, rate: float = 10.0, errors: float = 0.0, p99: float = 50.0
) -> GoldenSignals:
    return GoldenSignals(
        service=service,
        request_rate=rate,
        error_ratio=errors,
        latency_p50_ms=p99 / 3,
        latency_p99_ms=p99,
    )
