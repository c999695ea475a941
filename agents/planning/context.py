"""One planning call's view of the cluster and the change journal: read-only, cached, bounded.

Rules ask questions ("which workload is `geo`?", "who reads ConfigMap `hotel-config`?",
"what was this field before someone changed it?"); this module answers them from the scoped
reads of `ClusterReader` and `JournalView`, each read done at most once per call. A read that
fails is logged and answered as *unknown*: a planner with less information proposes fewer
fixes, it does not fail the incident.

"Put it back" needs the state before the *bad* change, not before the incident: the journal's
`last_known_good(before=t)` returns the state just before the first change at or after `t`,
so the planner finds the change that touched the suspect field (the latest one made before
the incident by someone other than Stratus) and asks for the state before it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from agents.diagnosis.facts import STRATUS_MANAGER
from agents.diagnosis.ports import JournalView
from agents.errors import StratusError
from agents.kubeparse import quantity_bytes, quantity_millis
from agents.model import (
    Change,
    ChangeType,
    EventRecord,
    Incident,
    JsonObject,
    KubeObject,
    NodeInfo,
    ObjectRef,
    PodState,
    QuotaInfo,
    RevisionInfo,
    Scope,
)
from agents.planning.paths import related
from agents.planning.template import PodTemplate
from agents.ports import ClusterReader
from storage.errors import StorageError

logger = logging.getLogger(__name__)

WORKLOAD_KINDS = ("Deployment", "StatefulSet")

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownGood:
    """An object's tracked state (spec, or ConfigMap data) before the change that broke it;
    empty when that change created the object."""

    body: JsonObject
    change: Change | None  # the change it came before (None: the diagnosis said so)

    def provenance(self) -> str:
        if self.change is None:
            return "as the diagnosis recorded it"
        at = self.change.at.strftime("%H:%M:%SZ")
        verb = "created" if self.created else "changed"
        return f"before {self.change.manager} {verb} it at {at}"

    @property
    def created(self) -> bool:
        """The breaking change created the object."""
        return self.change is not None and self.change.change_type is ChangeType.ADDED


def selector_text(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def matches(selector: dict[str, str], labels: dict[str, str] | Any) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def template_labels(workload: KubeObject) -> dict[str, str]:
    return dict(PodTemplate.of(workload.body).labels)


def match_labels(workload: KubeObject) -> dict[str, str]:
    return dict(PodTemplate.of(workload.body).selector)


def containers(body: JsonObject) -> list[JsonObject]:
    """The raw containers of a workload body (or of a tracked `{"spec": ...}` state), for
    patches built from them; `PodTemplate` for questions about them."""
    return [c.raw for c in PodTemplate.of(body).containers]


def pod_spec_of(body: JsonObject) -> JsonObject:
    return PodTemplate.of(body).spec


class Context:
    def __init__(
        self,
        *,
        reader: ClusterReader,
        journal: JournalView | None,
        incident: Incident,
        now: datetime,
        lookback: timedelta = timedelta(hours=2),
    ) -> None:
        self.reader = reader
        self.journal = journal
        self.incident = incident
        self.now = now
        self.lookback = lookback
        self._cache: dict[str, Any] = {}

    @property
    def scope(self) -> Scope:
        return self.incident.scope

    @property
    def namespace(self) -> str:
        return self.incident.scope.namespace

    def _once(self, key: str, read: Callable[[], T], default: T) -> T:
        if key not in self._cache:
            try:
                self._cache[key] = read()
            except (StratusError, StorageError) as e:  # the journal reads from storage
                logger.info("planning %s: %s failed: %s", self.incident.id, key, e)
                self._cache[key] = default
        value: T = self._cache[key]
        return value

    def ref(self, kind: str, name: str) -> ObjectRef:
        api = "apps/v1" if kind in WORKLOAD_KINDS else "v1"
        if kind == "HorizontalPodAutoscaler":
            api = "autoscaling/v2"
        if kind == "Node":
            return ObjectRef(api_version="v1", kind="Node", name=name)
        return ObjectRef(api_version=api, kind=kind, name=name, namespace=self.namespace)

    # ---------------------------------------------------------------------- objects

    def _list(self, api_version: str, kind: str) -> list[KubeObject]:
        return self._once(
            f"list {kind}",
            lambda: list(
                self.reader.list_objects(
                    api_version=api_version, kind=kind, namespace=self.namespace
                )
            ),
            [],
        )

    def workloads(self) -> list[KubeObject]:
        return [w for kind in WORKLOAD_KINDS for w in self._list("apps/v1", kind)]

    def workload(self, name: str) -> KubeObject | None:
        return next((w for w in self.workloads() if w.name == name), None)

    def workload_for(self, service: str) -> KubeObject | None:
        """The workload a diagnosed service names: same name, else what its Service selects."""
        found = self.workload(service)
        if found is not None:
            return found
        svc = self.service(service)
        if svc is None:
            return None
        selector = _selector(svc)
        return next((w for w in self.workloads() if matches(selector, template_labels(w))), None)

    def services(self) -> list[KubeObject]:
        return self._list("v1", "Service")

    def service(self, name: str) -> KubeObject | None:
        return next((s for s in self.services() if s.name == name), None)

    def services_for(self, workload: KubeObject) -> list[KubeObject]:
        """Services meant to front `workload`: same name, or a selector its pods carry."""
        labels = template_labels(workload)
        return [
            s for s in self.services() if s.name == workload.name or matches(_selector(s), labels)
        ]

    def get(self, kind: str, name: str) -> KubeObject | None:
        ref = self.ref(kind, name)
        return self._once(f"get {ref}", lambda: self.reader.get(ref), None)

    def owner(self, kind: str, name: str) -> KubeObject | None:
        """A pod's controller: a ReplicaSet (listed once per call) or a workload."""
        if kind in WORKLOAD_KINDS:
            return self.workload(name)
        if kind == "ReplicaSet":
            return next((rs for rs in self._list("apps/v1", kind) if rs.name == name), None)
        return None

    def pods_of(self, workload: KubeObject) -> list[PodState]:
        selector = match_labels(workload) or template_labels(workload)
        text = selector_text(selector)
        pods: list[PodState] = self._once(
            f"pods {text}", lambda: list(self.reader.pods(self.namespace, label_selector=text)), []
        )
        # Filtered here too: a reader may return more than the selector asked for.
        return [p for p in pods if matches(selector, dict(p.labels))]

    def revisions(self, workload: KubeObject) -> list[RevisionInfo] | None:
        """Rollout history, oldest first; None when it could not be read."""
        if workload.kind != "Deployment":
            return None
        result: list[RevisionInfo] | None = self._once(
            f"history {workload.name}",
            lambda: list(self.reader.rollout_history(self.namespace, workload.name)),
            None,
        )
        return result

    def hpa_for(self, workload: KubeObject) -> KubeObject | None:
        for hpa in self._list("autoscaling/v2", "HorizontalPodAutoscaler"):
            target = (hpa.body.get("spec") or {}).get("scaleTargetRef") or {}
            if target.get("kind") == workload.kind and target.get("name") == workload.name:
                return hpa
        return None

    def nodes(self) -> list[NodeInfo]:
        return self._once("nodes", lambda: list(self.reader.nodes()), [])

    def quotas(self) -> list[QuotaInfo]:
        return self._once("quotas", lambda: list(self.reader.quotas(self.namespace)), [])

    def events(self) -> list[EventRecord]:
        return self._once("events", lambda: list(self.reader.events(self.namespace)), [])

    def usage(self, workload: KubeObject, container: str) -> tuple[int | None, int | None]:
        """Observed (memory bytes, CPU millis) of a container, max over the workload's pods,
        from metrics.k8s.io when the cluster serves it."""
        pods = {p.name for p in self.pods_of(workload)}
        memory: int | None = None
        cpu: int | None = None
        for body in self._list("metrics.k8s.io/v1beta1", "PodMetrics"):
            if body.name not in pods:
                continue
            for c in body.body.get("containers") or []:
                if not isinstance(c, dict) or c.get("name") != container:
                    continue
                used = c.get("usage") or {}
                if "memory" in used:
                    memory = max(memory or 0, quantity_bytes(used["memory"]))
                if "cpu" in used:
                    cpu = max(cpu or 0, quantity_millis(used["cpu"]))
        return memory, cpu

    # ---------------------------------------------------------------------- journal

    def changes_of(self, kind: str, name: str) -> list[Change]:
        journal = self.journal
        if journal is None:
            return []
        since = self.incident.opened_at - self.lookback
        found: list[Change] = self._once(
            f"changes {kind}",
            lambda: list(journal.changes(self.scope, since, self.now, [kind])),
            [],
        )
        return sorted((c for c in found if c.name == name), key=lambda c: c.at)

    def breaking_change(self, kind: str, name: str, path: str) -> Change | None:
        """The change that most likely broke `path`: the latest one by someone other than
        Stratus before the incident opened, else the first one after."""
        touching = [
            c
            for c in self.changes_of(kind, name)
            if c.manager != STRATUS_MANAGER and any(related(p, path) for p in c.diff)
        ]
        before = [c for c in touching if c.at <= self.incident.opened_at]
        if before:
            return before[-1]
        return touching[0] if touching else None

    def known_good(self, kind: str, name: str, path: str) -> KnownGood | None:
        """The object's state before the change that touched `path`, from the journal.

        Stratus's own writes are never "last known good": when the value just before the
        breaking change was put there by Stratus (an earlier incident's mitigation), the
        state before *that* write is the one a person last chose."""
        journal = self.journal
        change = self.breaking_change(kind, name, path)
        if journal is None or change is None:
            return None
        anchor = change.at
        touching = [c for c in self.changes_of(kind, name) if any(related(p, path) for p in c.diff)]
        for earlier in reversed([c for c in touching if c.at < change.at]):
            if earlier.manager != STRATUS_MANAGER:
                break
            anchor = earlier.at
        body = self._once(
            f"lkg {kind}/{name}@{anchor.isoformat()}",
            lambda: journal.last_known_good(self.scope, kind, name, anchor),
            None,
        )
        if body is None and change.change_type is ChangeType.ADDED:
            # The journal saw the object created (a baseline is never a breaking change):
            # its state before is "not there", not unknown.
            return KnownGood(body={}, change=change)
        return KnownGood(body=body, change=change) if body is not None else None

    def recorded_values(self, kind: str, name: str, path: str) -> set[str]:
        """Every value `path` of the object is recorded to have had, as text: before and
        after each change in the journal's window, except values Stratus itself wrote."""
        out: set[str] = set()
        for c in self.changes_of(kind, name):
            for p, pair in c.diff.items():
                if not related(p, path):
                    continue
                old, new = (
                    pair if isinstance(pair, tuple | list) and len(pair) == 2 else (None, pair)
                )
                if old is not None:
                    out.add(str(old))
                if new is not None and c.manager != STRATUS_MANAGER:
                    out.add(str(new))
        return out


def _selector(service: KubeObject) -> dict[str, str]:
    selector = (service.body.get("spec") or {}).get("selector") or {}
    return {str(k): str(v) for k, v in selector.items()}


def service_selector(service: KubeObject) -> dict[str, str]:
    return _selector(service)


def first(items: Sequence[T]) -> T | None:
    return items[0] if items else None
