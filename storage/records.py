"""What storage hands out and takes in: plain records, one kind a table, with the columns as
fields.

The SQLModel rows (`storage.tables`) stay inside storage: a repository maps a record to its row
on the way in and a row to a record on the way out. The agents and the bot hold these records,
which carry no session, no SQL types and no lazy loading, and an import contract
(`pyproject.toml`) forbids them the tables, directly or through any module outside storage.
`tests/storage/test_records.py` checks that every record still has its table's columns and
defaults.

States, kinds, statuses and verbs are the string values of the agents' enums; storage is the
bottom layer and does not import the agents. Records are mutable like the rows they replace
(a caller may fill in a field before handing one back), never attached to anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class AuditVerb(StrEnum):
    """What an audit record says happened: one vocabulary for whoever writes the trail (the
    engine, Undo, approvals, detection, the digest) and whoever reads it (the channel, the
    digest, the bench). The repository refuses a verb not listed here."""

    # A transaction, step by step (DESIGN section 3).
    REFUSE = "refuse"  # admission refused it before any write (or an approval was refused)
    NOT_STARTED = "not_started"  # μ_before could not be measured: nothing opened
    LOCK = "lock"
    DRY_RUN = "dry_run"
    SNAPSHOT = "snapshot"
    WRITE = "write"
    VALIDATE = "validate"
    COMMIT = "commit"
    ABORT = "abort"  # the rollback begins
    RESTORE = "restore"  # one snapshot re-applied
    ABORTED = "aborted"  # rolled back, μ back within bounds
    ESCALATE = "escalate"  # rolled back, μ not back: a person takes over
    HELD = "held"  # not even restore was possible: held visibly
    # Undo of a committed transaction.
    UNDO = "undo"
    UNDO_RESTORE = "undo_restore"
    UNDO_BLOCKED = "undo_blocked"
    UNDO_DRIFT = "undo_drift"
    UNDONE = "undone"
    # People, alerts, digests.
    APPROVE = "approve"
    REJECT = "reject"
    ALERT = "alert"
    DIGEST = "digest"


@dataclass(slots=True, kw_only=True)
class StoredIncident:
    id: str
    title: str
    cluster: str
    namespace: str
    state: str
    mu0: float
    opened_at: datetime
    updated_at: datetime
    #: The grouping key of the incident's alerts: later alerts with the same key join it.
    group_key: str
    service: str | None = None
    source: str = "alertmanager"
    mu: float | None = None
    attempt: int = 0
    closed_at: datetime | None = None
    # Filled at close; what similar-incident search reads.
    summary: str | None = None
    root_cause_service: str | None = None
    category: str | None = None
    resolution: str | None = None


@dataclass(slots=True, kw_only=True)
class StoredAlert:
    """One alert of an incident, as the incident last heard of it."""

    incident_id: str
    fingerprint: str
    alertname: str
    status: str
    starts_at: datetime
    first_seen: datetime
    last_seen: datetime
    labels: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, Any] = field(default_factory=dict)
    ends_at: datetime | None = None
    count: int = 1
    id: int | None = None


@dataclass(slots=True, kw_only=True)
class StoredTimelineEvent:
    incident_id: str
    at: datetime
    state: str
    kind: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


@dataclass(slots=True, kw_only=True)
class StoredDiagnosis:
    incident_id: str
    created_at: datetime
    reasoner: str
    root_cause_service: str
    category: str
    confidence: float
    summary: str
    tokens: int = 0
    fallback_reason: str | None = None
    #: The whole diagnosis (hypotheses, evidence) as the agents serialise it.
    body: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


@dataclass(slots=True, kw_only=True)
class StoredSlackMessage:
    """Where a message about an incident lives in Slack, so that it can be updated in place."""

    channel: str
    ts: str
    kind: str
    created_at: datetime
    updated_at: datetime
    incident_id: str | None = None
    thread_ts: str | None = None
    #: What the message shows: a plan id, a transaction id.
    ref: str | None = None
    id: int | None = None


@dataclass(slots=True, kw_only=True)
class StoredPlan:
    id: str
    incident_id: str
    status: str
    risk: str
    content_hash: str
    created_at: datetime
    attempt: int = 0
    #: 0 is the planner's first choice; alternatives follow.
    rank: int = 0
    actions: list[Any] = field(default_factory=list)
    rationale: str = ""
    body: dict[str, Any] = field(default_factory=dict)
    expires_at: datetime | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    reject_reason: str | None = None


@dataclass(slots=True, kw_only=True)
class StoredApproval:
    """One person's approval, bound to the plan's contents (`content_hash`) when given."""

    id: str
    plan_id: str
    content_hash: str
    user_id: str
    created_at: datetime
    expires_at: datetime


@dataclass(slots=True, kw_only=True)
class StoredTransaction:
    id: str
    cluster: str
    namespace: str
    status: str
    started_at: datetime
    #: None for a manual undo, which belongs to no incident.
    incident_id: str | None = None
    plan_id: str | None = None
    fencing_token: int | None = None
    mu0: float | None = None
    mu_before: float | None = None
    mu_after: float | None = None
    deadline_at: datetime | None = None
    ended_at: datetime | None = None
    holder: str | None = None
    validation: dict[str, Any] | None = None
    reason: str | None = None


@dataclass(slots=True, kw_only=True)
class StoredUndoEntry:
    id: str
    transaction_id: str
    target_api_version: str
    target_kind: str
    target_name: str
    created_at: datetime
    target_namespace: str | None = None
    #: Stack position within the transaction, from 1; assigned by `UndoRepository.push`.
    seq: int = 0
    action: dict[str, Any] = field(default_factory=dict)
    #: Whether the object existed before the write (if not, undo deletes it).
    existed: bool = True
    snapshot: dict[str, Any] | None = None
    state: str = "pending"
    produced_resource_version: str | None = None
    #: The comparable form of what the write produced: drift is a difference from it.
    produced: dict[str, Any] | None = None
    applied_at: datetime | None = None
    restored_at: datetime | None = None
    #: What a drift-confirmed undo overwrote (someone else's change), kept for the audit.
    overwritten: dict[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class StoredAudit:
    """One line of the append-only audit trail."""

    at: datetime
    actor: str
    verb: AuditVerb
    incident_id: str | None = None
    transaction_id: str | None = None
    scope: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


@dataclass(slots=True, kw_only=True)
class StoredJournalEntry:
    """One observed change of a watched object (who changed what, and when)."""

    cluster: str
    namespace: str
    kind: str
    name: str
    at: datetime
    change_type: str  # ADDED | MODIFIED | DELETED
    manager: str | None = None
    resource_version: str | None = None
    #: field path → [old, new]
    diff: dict[str, Any] = field(default_factory=dict)
    #: The object's spec/data as of this change: the last-known-good source.
    object: dict[str, Any] | None = None
    id: int | None = None
