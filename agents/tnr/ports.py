"""What the transaction engine needs from storage, as one port.

The engine is written against this Protocol; `agents.tnr.ledger.StorageLedger` implements it
over the repositories of `storage`. Every method is one database transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

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
)
from agents.tnr.records import LeaseRecord, Snapshot, TransactionRecord, UndoRecord
from storage.records import AuditVerb


class Ledger(Protocol):
    # ----------------------------------------------------------------- transactions
    def open_transaction(
        self,
        *,
        scope: Scope,
        incident_id: IncidentId | None,
        plan_id: PlanId | None,
        fencing_token: int,
        mu0: float,
        mu_before: float,
        started_at: datetime,
        deadline_at: datetime,
        holder: str,
    ) -> TransactionRecord: ...

    def transaction(self, transaction_id: TransactionId) -> TransactionRecord: ...

    def set_status(
        self,
        transaction_id: TransactionId,
        status: TransactionStatus,
        *,
        mu_after: float | None = None,
        reason: str | None = None,
        validation: dict[str, Any] | None = None,
        ended_at: datetime | None = None,
        fencing_token: int | None = None,
        mu_after_unknown: bool = False,
    ) -> None: ...

    def interrupted(self) -> Sequence[TransactionRecord]:
        """Transactions a crash left open, validating or aborting."""
        ...

    # ------------------------------------------------------------------- undo stack
    def push(
        self,
        *,
        transaction_id: TransactionId,
        seq: int,
        action: Action,
        target: ObjectRef,
        snapshot: Snapshot,
        at: datetime,
    ) -> UndoRecord:
        """Persist a write-ahead undo entry (state PENDING) before the write it covers."""
        ...

    def mark_applied(
        self,
        entry_id: UndoEntryId,
        *,
        produced_resource_version: str | None,
        produced: JsonObject | None,
        at: datetime,
    ) -> None: ...

    def mark_restored(
        self, entry_id: UndoEntryId, *, at: datetime, overwritten: JsonObject | None = None
    ) -> None: ...

    def mark_skipped(self, entry_id: UndoEntryId, *, at: datetime) -> None: ...

    def stack(self, transaction_id: TransactionId) -> Sequence[UndoRecord]:
        """The transaction's entries, last pushed first (the order an abort pops them)."""
        ...

    def later_transactions_on(
        self, transaction_id: TransactionId, targets: Sequence[ObjectRef]
    ) -> Sequence[TransactionRecord]:
        """Committed transactions, started after this one and not undone, that wrote any of
        `targets`: they must be undone first (undo is LIFO across transactions)."""
        ...

    # ------------------------------------------------------------------------ audit
    def audit(
        self,
        verb: AuditVerb,
        *,
        actor: str,
        scope: Scope,
        at: datetime,
        transaction_id: TransactionId | None = None,
        incident_id: IncidentId | None = None,
        detail: JsonObject | None = None,
    ) -> None: ...

    # ------------------------------------------------------------------------ locks
    def acquire_lock(self, scope: Scope, holder: str, ttl_s: float) -> int | None:
        """A fencing token, or None when another holder has an unexpired lease."""
        ...

    def renew_lock(self, scope: Scope, holder: str, token: int, ttl_s: float) -> None:
        """Raises `LockLost` when the lease was taken over."""
        ...

    def release_lock(self, scope: Scope, holder: str, token: int) -> None: ...

    def lease_holder(self, scope: Scope) -> str | None:
        """Who holds an unexpired lease on `scope` now, if anyone."""
        ...

    def last_lease(self, scope: Scope) -> LeaseRecord | None:
        """The lease on `scope` as it stands, expired or not; None if never granted."""
        ...

    def assert_lock(self, scope: Scope, token: int, *, min_remaining_s: float = 0.0) -> None:
        """Raises `LockLost` unless `token` is the current holder's token with at least
        `min_remaining_s` of its lease left."""
        ...
