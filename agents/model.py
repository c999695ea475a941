"""The incident vocabulary: one noun per pipeline stage, used the same way in code, tables,
Slack text and logs.

    Alert → Incident → Diagnosis (Hypothesis, Evidence) → Plan (Action…) → Transaction
    (UndoEntry…) → Outcome

Everything here is a frozen value. Kubernetes objects travel as `KubeObject` (the JSON body the
API server speaks, never an SDK model), and the reads that detection and diagnosis use are
parsed once into the typed snapshots below (`PodState`, `WorkloadState`, ...).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, NewType

#: A Kubernetes object or other JSON document exactly as it travels on the wire. Kept as a
#: plain mapping on purpose: the transaction engine snapshots and restores objects of any
#: allowlisted kind, and a typed model per kind would drop fields it does not know.
JsonObject = dict[str, Any]

IncidentId = NewType("IncidentId", str)
PlanId = NewType("PlanId", str)
TransactionId = NewType("TransactionId", str)
UndoEntryId = NewType("UndoEntryId", str)
ApprovalId = NewType("ApprovalId", str)


# --------------------------------------------------------------------------- scope & objects


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What one incident, and one writer lock, covers: a namespace of one cluster."""

    cluster: str
    namespace: str

    @property
    def key(self) -> str:
        return f"{self.cluster}/{self.namespace}"

    @classmethod
    def parse(cls, key: str) -> Scope:
        cluster, _, namespace = key.partition("/")
        return cls(cluster=cluster, namespace=namespace)


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectRef:
    """Points at one Kubernetes object. `namespace` is None for cluster-scoped kinds (Node)."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{where}{self.name}"


@dataclass(frozen=True, slots=True)
class KubeObject:
    """A Kubernetes object body as JSON, with the few accessors everyone needs."""

    body: JsonObject

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def metadata(self) -> JsonObject:
        meta = self.body.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str | None:
        ns = self.metadata.get("namespace")
        return str(ns) if ns else None

    @property
    def resource_version(self) -> str | None:
        rv = self.metadata.get("resourceVersion")
        return str(rv) if rv else None

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(
            api_version=self.api_version, kind=self.kind, name=self.name, namespace=self.namespace
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectList:
    """A list of one kind's objects and the list's own resourceVersion: the point a watch
    resumes from. The newest item's resourceVersion is no substitute (it can be far older
    than the server's watch history, and a watch from it is refused as 410 Gone)."""

    items: tuple[KubeObject, ...]
    resource_version: str | None


# --------------------------------------------------------------------------------- reads


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerState:
    name: str
    image: str
    ready: bool
    restart_count: int
    state: str  # "running" | "waiting" | "terminated"
    reason: str | None = None  # CrashLoopBackOff, ImagePullBackOff, OOMKilled, ...
    message: str | None = None
    last_terminated_reason: str | None = None
    last_exit_code: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PodState:
    name: str
    namespace: str
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    ready: bool
    node: str | None
    labels: Mapping[str, str]
    owner: str | None  # "ReplicaSet/frontend-5d9c7" when controller-owned
    containers: tuple[ContainerState, ...]
    unschedulable_message: str | None = None
    created_at: datetime | None = None
    #: Init containers, in order: one that fails keeps every container above from starting.
    init_containers: tuple[ContainerState, ...] = ()

    @property
    def restart_count(self) -> int:
        return sum(c.restart_count for c in self.containers)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadState:
    kind: str  # Deployment | StatefulSet
    name: str
    namespace: str
    replicas: int  # desired
    ready_replicas: int
    available_replicas: int
    updated_replicas: int
    generation: int
    observed_generation: int
    selector: Mapping[str, str]
    images: Mapping[str, str]  # container name → image
    revision: int | None = None
    conditions: Mapping[str, str] = field(default_factory=dict)  # type → status
    current_replicas: int = 0  # pods it has now, old and new (status.replicas)

    @property
    def lost_replicas(self) -> int:
        """Replicas the workload is short of: wanted but not available, a rollout that cannot
        bring up its new pods (refused by a quota, crash-looping while the old pod still
        serves), or pods it runs that are not available."""
        if self.replicas == 0:
            return 0
        return max(
            0,
            self.replicas - self.available_replicas,
            self.replicas - self.updated_replicas,
            self.current_replicas - self.available_replicas,
        )

    @property
    def converged(self) -> bool:
        return (
            self.observed_generation >= self.generation
            and self.updated_replicas == self.replicas
            and self.available_replicas == self.replicas
            and self.ready_replicas == self.replicas
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EventRecord:
    namespace: str
    object_kind: str
    object_name: str
    reason: str
    message: str
    type: str  # Normal | Warning
    count: int
    last_seen: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServicePort:
    port: int
    target_port: int | str
    protocol: str = "TCP"
    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceInfo:
    name: str
    namespace: str
    selector: Mapping[str, str]
    ports: tuple[ServicePort, ...]
    ready_endpoints: int
    cluster_ip: str | None = None  # None for a headless Service


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigMapInfo:
    """A ConfigMap's data. Secrets are never read; values here have been through redaction."""

    name: str
    namespace: str
    data: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeInfo:
    name: str
    ready: bool
    unschedulable: bool
    labels: Mapping[str, str]
    taints: tuple[str, ...]  # "key=value:Effect"
    allocatable_cpu_millis: int
    allocatable_memory_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotaInfo:
    name: str
    namespace: str
    hard: Mapping[str, str]
    used: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class RevisionInfo:
    """One entry of a Deployment's rollout history (its ReplicaSets)."""

    revision: int
    images: Mapping[str, str]
    replica_set: str
    created_at: datetime | None = None
    #: A digest of the pod template's spec (`kubeparse.pod_spec_digest`), "" when unknown.
    #: Not of its metadata: `kubectl rollout restart` makes a revision that differs from the
    #: one it restarted only by an annotation, and rolling back to it changes nothing.
    pod_spec: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenSignals:
    """Request-level health of one service over a recent window."""

    service: str
    request_rate: float  # requests per second
    error_ratio: float  # 0..1
    latency_p50_ms: float
    latency_p99_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesPoint:
    at: datetime
    value: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Series:
    """One labelled time series, for charts."""

    name: str
    labels: Mapping[str, str]
    points: tuple[SeriesPoint, ...]


# --------------------------------------------------------------------------------- alerts


class AlertStatus(StrEnum):
    FIRING = "firing"
    RESOLVED = "resolved"


@dataclass(frozen=True, slots=True, kw_only=True)
class Alert:
    """One alert as Alertmanager reports it (or as the periodic scan synthesises it)."""

    fingerprint: str
    name: str  # the alertname label
    status: AlertStatus
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    starts_at: datetime
    ends_at: datetime | None = None
    source: str = "alertmanager"  # alertmanager | scan | declared

    @property
    def severity(self) -> str:
        return self.labels.get("severity", "warning")

    @property
    def namespace(self) -> str | None:
        return self.labels.get("namespace")

    @property
    def service(self) -> str | None:
        return self.labels.get("service") or self.labels.get("deployment")


# ------------------------------------------------------------------------------ incidents


class IncidentState(StrEnum):
    """The states of DESIGN section 2. Deterministic code, not agents, moves between them."""

    DETECTED = "detected"
    DIAGNOSING = "diagnosing"
    DIAGNOSED = "diagnosed"
    PLANNING = "planning"
    AWAITING_APPROVAL = "awaiting_approval"
    EXECUTING = "executing"
    VALIDATING = "validating"
    COMMITTED = "committed"
    ABORTING = "aborting"
    #: A rollback could not be finished or its result could not be measured: open, visible,
    #: never "healthy"; each advance (or the Undo button) tries to finish the restore.
    HELD = "held"
    RESOLVED = "resolved"
    ESCALATED = "escalated"
    CLOSED = "closed"

    @property
    def is_open(self) -> bool:
        return self is not IncidentState.CLOSED


@dataclass(frozen=True, slots=True, kw_only=True)
class Incident:
    id: IncidentId
    title: str
    scope: Scope
    state: IncidentState
    mu0: float  # severity measured at detection: the bound no transaction may exceed
    opened_at: datetime
    updated_at: datetime
    service: str | None = None  # the service the alerts point at (not the diagnosed cause)
    attempt: int = 0
    mu: float | None = None  # latest measurement
    closed_at: datetime | None = None
    source: str = "alertmanager"


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineEvent:
    incident_id: IncidentId
    at: datetime
    state: IncidentState
    kind: str  # transition | note | alert | approval | transaction | undo
    message: str
    data: JsonObject = field(default_factory=dict)


# ---------------------------------------------------------------------------- change journal


class ChangeType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One recorded change of a watched object: who, what (field-level), when."""

    at: datetime
    cluster: str
    namespace: str
    kind: str
    name: str
    manager: str  # the field manager that made it (managedFields), e.g. "kubectl", "stratus"
    change_type: ChangeType
    diff: Mapping[str, tuple[Any, Any]]  # field path → (old, new); values already redacted
    resource_version: str | None = None

    def summary(self, limit: int = 3) -> str:
        fields = ", ".join(list(self.diff)[:limit]) or self.change_type.lower()
        more = f" (+{len(self.diff) - limit})" if len(self.diff) > limit else ""
        return f"{self.kind}/{self.name} changed by {self.manager}: {fields}{more}"


# ------------------------------------------------------------------------------ diagnosis


class FaultLevel(StrEnum):
    """AIOpsLab's system levels."""

    HARDWARE = "hardware"
    OPERATING_SYSTEM = "operating_system"
    VIRTUALIZATION = "virtualization"
    APPLICATION = "application"


class FaultType(StrEnum):
    """AIOpsLab's fault types."""

    MISCONFIGURATION = "misconfiguration"
    CODE_DEFECT = "code_defect"
    AUTHENTICATION = "authentication"
    NETWORK = "network"
    STORAGE = "storage"
    OPERATION_ERROR = "operation_error"
    DEPENDENCY = "dependency"
    NONE = "none"


@dataclass(frozen=True, slots=True, kw_only=True)
class Category:
    level: FaultLevel
    type: FaultType

    def __str__(self) -> str:
        return f"{self.level}/{self.type}"

    @classmethod
    def parse(cls, text: str) -> Category:
        level, _, kind = text.partition("/")
        return cls(level=FaultLevel(level), type=FaultType(kind))


class EvidenceKind(StrEnum):
    POD_STATE = "pod_state"
    EVENT = "event"
    LOG = "log"
    METRIC = "metric"
    CHANGE = "change"
    CONFIG = "config"
    NODE = "node"
    QUOTA = "quota"
    SERVICE = "service"
    ALERT = "alert"
    SIMILAR = "similar_incident"


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    kind: EvidenceKind
    source: str  # what was read: "pods/hotel/geo-7d9", "logs/hotel/frontend-1", a PromQL query
    summary: str  # one line a human reads
    service: str | None = None
    detail: str = ""  # bounded excerpt (already redacted)

    def detail_object(self) -> JsonObject:
        """`detail` read as the JSON object a rule wrote there; {} when it holds none (a
        stored diagnosis from another version, or a plain excerpt)."""
        try:
            value = json.loads(self.detail) if self.detail else {}
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Hypothesis:
    service: str
    category: Category
    confidence: float  # 0..1
    explanation: str
    evidence: tuple[int, ...] = ()  # indexes into Diagnosis.evidence
    #: The reason the cluster prints for the service's trouble (CreateContainerConfigError,
    #: FailedScheduling, OOMKilled…), read from its state; None when it shows none.
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimilarIncident:
    """A closed incident that looks like this one, with what it turned out to be."""

    incident_id: IncidentId
    title: str
    score: float  # 0..1
    root_cause_service: str | None
    category: str | None
    resolution: str | None  # what fixed it (plan summary), or how it ended
    closed_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    incident_id: IncidentId
    hypotheses: tuple[Hypothesis, ...]  # ranked, best first; never empty
    evidence: tuple[Evidence, ...]
    reasoner: str  # "offline" | "claude:<model>"
    summary: str
    tokens: int = 0
    fallback_reason: str | None = None  # why the Claude reasoner handed over to the offline one
    similar: tuple[SimilarIncident, ...] = ()
    evidence_tokens: int = 0  # estimated size of the evidence handed to the reasoner
    created_at: datetime | None = None

    @property
    def top(self) -> Hypothesis:
        return self.hypotheses[0]

    @property
    def root_cause_service(self) -> str:
        return self.top.service

    @property
    def category(self) -> Category:
        return self.top.category

    @property
    def confidence(self) -> float:
        return self.top.confidence


# --------------------------------------------------------------------------- plans & risk


class Risk(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {"low": 0, "medium": 1, "high": 2}[self.value]


class Autonomy(StrEnum):
    OBSERVE = "observe"
    PROPOSE = "propose"
    AUTO_LOW_RISK = "auto-low-risk"
    AUTONOMOUS = "autonomous"


class PlanStatus(StrEnum):
    PROPOSED = "proposed"  # waiting for approval
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    EXECUTED = "executed"


# ----------------------------------------------------------------------------- transactions


class TransactionStatus(StrEnum):
    OPEN = "open"  # lock held, writing
    VALIDATING = "validating"  # all writes done; settle then sustain
    COMMITTED = "committed"
    ABORTING = "aborting"  # popping the undo stack
    ABORTED = "aborted"  # restored, μ back to ≤ μ_before
    ESCALATED = "escalated"  # restore did not bring μ back: a human must look
    UNDOING = "undoing"  # committed; a person asked for undo and it is under way
    UNDONE = "undone"  # committed, later undone by a person
    #: The abort could not restore every entry, or could not measure the result: the entries
    #: not restored stay PENDING/APPLIED; Undo (or the incident's next advance) finishes it.
    HELD = "held"


class UndoState(StrEnum):
    PENDING = "pending"  # persisted ahead of the write; the write may or may not have happened
    APPLIED = "applied"  # the write happened; produced_resource_version is recorded
    RESTORED = "restored"  # the snapshot was re-applied (abort or undo)
    SKIPPED = "skipped"  # nothing to restore (the write never happened)


class OutcomeKind(StrEnum):
    COMMITTED = "committed"
    ABORTED = "aborted"
    ESCALATED = "escalated"
    REFUSED = "refused"  # not admitted: nothing was written
    #: μ_before could not be measured: no transaction was opened, nothing was written; the
    #: plan is tried again later (not a failed attempt).
    NOT_STARTED = "not_started"
    HELD = "held"  # aborted, but the restore is unfinished or its result unmeasured


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """How a transaction ended, with the figures a human needs to trust the verdict."""

    transaction_id: TransactionId
    kind: OutcomeKind
    mu_before: float
    mu_after: float | None
    healthy: bool
    reason: str
    actions_applied: int = 0
    restored: int = 0
