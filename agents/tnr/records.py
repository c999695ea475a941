"""The engine's view of what it persisted: transactions and undo entries, as frozen values.

`StorageLedger` (in `agents.tnr.ledger`) maps these to and from storage; the rest of the engine
never sees a storage record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents.actions import Action
from agents.model import (
    IncidentId,
    JsonObject,
    ObjectRef,
    PlanId,
    Scope,
    TransactionId,
    TransactionStatus,
    UndoEntryId,
    UndoState,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """What a write-ahead undo entry keeps about the object before the write."""

    existed: bool
    object: JsonObject | None  # cleaned (no server-managed fields); None when it did not exist
    base_resource_version: str | None  # the version the engine read; unchanged ⇒ no write


@dataclass(frozen=True, slots=True, kw_only=True)
class UndoRecord:
    id: UndoEntryId
    transaction_id: TransactionId
    seq: int
    action: Action
    target: ObjectRef
    snapshot: Snapshot
    state: UndoState
    produced_resource_version: str | None = None
    produced: JsonObject | None = None  # comparable form of what the write produced (drift)
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionRecord:
    id: TransactionId
    scope: Scope
    status: TransactionStatus
    incident_id: IncidentId | None
    plan_id: PlanId | None
    fencing_token: int
    mu0: float
    mu_before: float
    mu_after: float | None
    started_at: datetime
    deadline_at: datetime
    holder: str
    validation: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    ended_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseRecord:
    """The writer lease on a scope as storage last saw it (expired or not)."""

    holder: str
    token: int
    renewed_at: datetime
    expires_at: datetime
