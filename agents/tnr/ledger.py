"""`StorageLedger`: what the transaction engine persists, over the repositories of `storage`.

The engine, the writer lock and restore are written against this class (it has one
implementation, so no Protocol stands in front of it). Storage records become the engine's
frozen values here and nowhere else. Each method is one storage call, hence one database
transaction: a crash between two of them leaves the state the engine's recovery is written to
handle.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agents.actions import Action, action_from_json, action_to_json
from agents.errors import LockLost
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
from agents.tnr.records import LeaseRecord, Snapshot, TransactionRecord, UndoRecord
from storage import StaleToken, Store
from storage.records import AuditVerb, StoredAudit, StoredTransaction, StoredUndoEntry


def _tx(row: StoredTransaction) -> TransactionRecord:
    return TransactionRecord(
        id=TransactionId(row.id),
        scope=Scope(cluster=row.cluster, namespace=row.namespace),
        status=TransactionStatus(row.status),
        incident_id=IncidentId(row.incident_id) if row.incident_id else None,
        plan_id=PlanId(row.plan_id) if row.plan_id else None,
        fencing_token=row.fencing_token or 0,
        mu0=row.mu0 or 0.0,
        mu_before=row.mu_before or 0.0,
        mu_after=row.mu_after,
        started_at=row.started_at,
        deadline_at=row.deadline_at or row.started_at,
        holder=row.holder or "",
        validation=dict(row.validation or {}),
        reason=row.reason,
        ended_at=row.ended_at,
    )


def _entry(row: StoredUndoEntry) -> UndoRecord:
    snapshot: dict[str, Any] = dict(row.snapshot or {})
    return UndoRecord(
        id=UndoEntryId(row.id),
        transaction_id=TransactionId(row.transaction_id),
        seq=row.seq,
        action=action_from_json(row.action),
        target=ObjectRef(
            api_version=row.target_api_version,
            kind=row.target_kind,
            name=row.target_name,
            namespace=row.target_namespace,
        ),
        snapshot=Snapshot(
            existed=row.existed,
            object=snapshot.get("object"),
            base_resource_version=snapshot.get("base_resource_version"),
        ),
        state=UndoState(row.state),
        produced_resource_version=row.produced_resource_version,
        produced=row.produced,
        created_at=row.created_at,
    )


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class StorageLedger:
    def __init__(self, store: Store) -> None:
        self._store = store

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
    ) -> TransactionRecord:
        row = self._store.transactions.create(
            StoredTransaction(
                id=new_id("tx"),
                incident_id=incident_id,
                plan_id=plan_id,
                cluster=scope.cluster,
                namespace=scope.namespace,
                status=TransactionStatus.OPEN.value,
                fencing_token=fencing_token,
                mu0=mu0,
                mu_before=mu_before,
                started_at=started_at,
                deadline_at=deadline_at,
                holder=holder,
            )
        )
        return _tx(row)

    def transaction(self, transaction_id: TransactionId) -> TransactionRecord:
        return _tx(self._store.transactions.get(transaction_id))

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
    ) -> None:
        if fencing_token is not None:
            self._store.transactions.set_figures(transaction_id, fencing_token=fencing_token)
        self._store.transactions.set_status(
            transaction_id,
            status.value,
            mu_after=mu_after,
            reason=reason,
            validation=validation,
            ended_at=ended_at,
            mu_after_unknown=mu_after_unknown,
        )

    def interrupted(self) -> Sequence[TransactionRecord]:
        """Transactions a crash left open, validating or aborting."""
        return [_tx(row) for row in self._store.transactions.list_interrupted()]

    def for_incident(self, incident_id: IncidentId) -> Sequence[TransactionRecord]:
        return [_tx(row) for row in self._store.transactions.list_for_incident(incident_id)]

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
        # `seq` is assigned by storage (top of the stack + 1); ours is only a hint.
        row = self._store.undo.push(
            StoredUndoEntry(
                id=new_id("undo"),
                transaction_id=transaction_id,
                action=action_to_json(action),
                target_api_version=target.api_version,
                target_kind=target.kind,
                target_namespace=target.namespace,
                target_name=target.name,
                existed=snapshot.existed,
                snapshot={
                    "object": snapshot.object,
                    "base_resource_version": snapshot.base_resource_version,
                },
                created_at=at,
            )
        )
        return _entry(row)

    def mark_applied(
        self,
        entry_id: UndoEntryId,
        *,
        produced_resource_version: str | None,
        produced: JsonObject | None,
        at: datetime,
    ) -> None:
        self._store.undo.mark_applied(
            entry_id,
            produced_resource_version=produced_resource_version,
            produced=produced,
            at=at,
        )

    def mark_restored(
        self, entry_id: UndoEntryId, *, at: datetime, overwritten: JsonObject | None = None
    ) -> None:
        self._store.undo.mark_restored(entry_id, at=at, overwritten=overwritten)

    def mark_skipped(self, entry_id: UndoEntryId, *, at: datetime) -> None:
        self._store.undo.mark_skipped(entry_id, at=at)

    def stack(self, transaction_id: TransactionId) -> Sequence[UndoRecord]:
        """The transaction's entries, last pushed first (the order an abort pops them)."""
        return [_entry(row) for row in self._store.undo.stack(transaction_id)]

    def later_transactions_on(
        self, transaction_id: TransactionId, targets: Sequence[ObjectRef]
    ) -> Sequence[TransactionRecord]:
        """Committed transactions, started after this one and not undone, that wrote any of
        `targets`: they must be undone first (undo is LIFO across transactions)."""
        ids = self._store.undo.later_transactions(transaction_id)
        return [self.transaction(TransactionId(i)) for i in ids]

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
    ) -> None:
        self._store.audit.append(
            StoredAudit(
                at=at,
                actor=actor,
                verb=verb,
                incident_id=incident_id,
                transaction_id=transaction_id,
                scope=scope.key,
                detail=detail or {},
            )
        )

    # ------------------------------------------------------------------------ locks
    def acquire_lock(self, scope: Scope, holder: str, ttl_s: float) -> int | None:
        """A fencing token, or None when another holder has an unexpired lease."""
        lease = self._store.locks.acquire(scope.key, holder, ttl_s)
        return lease.token if lease is not None else None

    def renew_lock(self, scope: Scope, holder: str, token: int, ttl_s: float) -> None:
        """Raises `LockLost` when the lease was taken over."""
        try:
            self._store.locks.renew(scope.key, holder, token, ttl_s)
        except StaleToken as e:
            raise LockLost(str(e)) from e

    def release_lock(self, scope: Scope, holder: str, token: int) -> None:
        self._store.locks.release(scope.key, holder, token)

    def lease_holder(self, scope: Scope) -> str | None:
        """Who holds an unexpired lease on `scope` now, if anyone."""
        lease = self._store.locks.current(scope.key)
        return lease.holder if lease is not None else None

    def last_lease(self, scope: Scope) -> LeaseRecord | None:
        """The lease on `scope` as it stands, expired or not; None if never granted."""
        lease = self._store.locks.last(scope.key)
        if lease is None:
            return None
        return LeaseRecord(
            holder=lease.holder,
            token=lease.token,
            renewed_at=lease.renewed_at,
            expires_at=lease.expires_at,
        )

    def assert_lock(self, scope: Scope, token: int, *, min_remaining_s: float = 0.0) -> None:
        """Raises `LockLost` unless `token` is the current holder's token with at least
        `min_remaining_s` of its lease left."""
        try:
            self._store.locks.assert_current(scope.key, token, min_remaining_s=min_remaining_s)
        except StaleToken as e:
            raise LockLost(str(e)) from e
