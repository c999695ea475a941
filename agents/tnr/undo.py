"""Undo after commit — the Undo button's engine (DESIGN section 3, rule 7).

A committed transaction keeps its undo entries. Undoing pops them LIFO under the writer lock,
and only when no later committed transaction wrote the same objects (those must be undone
first). If an object drifted since our write, nothing is written until a person confirms; with
the confirmation the snapshot is restored and what it overwrote goes into the audit record.

Undo of a HELD transaction (an abort that could not finish its restore, or not measure it)
finishes that restore under the writer lock, the way recovery finishes an abort.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from agents.errors import ClusterError, LockLost
from agents.model import JsonObject, OutcomeKind, TransactionId, TransactionStatus, UndoState
from agents.tnr.engine import Checkpoint, Progress, ProgressCallback, Step, TransactionEngine
from agents.tnr.lock import LockBusy, WriterLock
from agents.tnr.records import TransactionRecord, UndoRecord
from agents.tnr.restore import Drift
from storage.records import AuditVerb

logger = logging.getLogger(__name__)


class UndoStatus(StrEnum):
    UNDONE = "undone"
    DRIFT = "drift"  # someone changed an object since; confirmation needed
    BLOCKED = "blocked"  # a later transaction on the same objects must be undone first
    REFUSED = "refused"  # not a committed transaction
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class UndoResult:
    transaction_id: TransactionId
    status: UndoStatus
    message: str
    drift: tuple[Drift, ...] = ()
    blocked_by: tuple[TransactionId, ...] = ()
    restored: int = 0
    overwritten: dict[str, object] = field(default_factory=dict)
    mu_after: float | None = None


class Undoer:
    def __init__(self, engine: TransactionEngine, *, checkpoint: Checkpoint | None = None) -> None:
        self._engine = engine
        self._ledger = engine.ledger
        self._checkpoint = checkpoint or (lambda _name: None)

    def undo(
        self,
        transaction_id: TransactionId,
        *,
        actor: str,
        confirm_drift: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> UndoResult:
        tx = self._ledger.transaction(transaction_id)
        if tx.status is TransactionStatus.HELD:
            return self._finish_held(tx, actor=actor)
        if tx.status not in (TransactionStatus.COMMITTED, TransactionStatus.UNDOING):
            return UndoResult(
                transaction_id=tx.id,
                status=UndoStatus.REFUSED,
                message=f"transaction {tx.id} is {tx.status}; "
                "only committed transactions can be undone",
            )
        lock = self._lock(tx)
        if isinstance(lock, UndoResult):
            return lock
        try:
            return self._undo_locked(
                tx, lock, actor=actor, confirm_drift=confirm_drift, emit=on_progress
            )
        except LockLost:
            raise
        except ClusterError as e:
            logger.exception("undo of %s failed", tx.id)
            return UndoResult(
                transaction_id=tx.id, status=UndoStatus.FAILED, message=f"undo failed: {e}"
            )
        finally:
            lock.release()

    def _lock(self, tx: TransactionRecord) -> WriterLock | UndoResult:
        """The scope's writer lock, held; a failed result when another writer keeps it."""
        lock = self._engine.lock(tx.scope)
        try:
            lock.acquire()
        except LockBusy as e:
            return UndoResult(transaction_id=tx.id, status=UndoStatus.FAILED, message=str(e))
        return lock

    def _undo_locked(
        self,
        tx: TransactionRecord,
        lock: WriterLock,
        *,
        actor: str,
        confirm_drift: bool,
        emit: ProgressCallback | None,
    ) -> UndoResult:
        entries = [e for e in self._ledger.stack(tx.id) if e.state is UndoState.APPLIED]
        blocked = self._blocked(tx, entries, actor=actor)
        if blocked is not None:
            return blocked
        if tx.status is TransactionStatus.COMMITTED:
            drifted = self._begin(tx, lock, entries, actor=actor, confirm_drift=confirm_drift)
            if drifted is not None:
                return drifted
        restored, overwritten = self._restore_entries(tx, lock, entries, actor=actor, emit=emit)
        return self._record_undone(
            tx,
            restored=restored,
            total=len(entries),
            overwritten=overwritten,
            actor=actor,
            emit=emit,
        )

    def _audit(
        self, verb: AuditVerb, tx: TransactionRecord, actor: str, detail: JsonObject
    ) -> None:
        self._ledger.audit(
            verb,
            actor=actor,
            scope=tx.scope,
            at=self._engine.clock.now(),
            transaction_id=tx.id,
            incident_id=tx.incident_id,
            detail=detail,
        )

    def _blocked(
        self, tx: TransactionRecord, entries: Sequence[UndoRecord], *, actor: str
    ) -> UndoResult | None:
        """A later transaction on the same objects must be undone first."""
        later = self._ledger.later_transactions_on(tx.id, [e.target for e in entries])
        if not later:
            return None
        ids = tuple(t.id for t in later)
        self._audit(AuditVerb.UNDO_BLOCKED, tx, actor, {"blocked_by": list(ids)})
        return UndoResult(
            transaction_id=tx.id,
            status=UndoStatus.BLOCKED,
            message="undo these later transactions on the same objects first: " + ", ".join(ids),
            blocked_by=ids,
        )

    def _begin(
        self,
        tx: TransactionRecord,
        lock: WriterLock,
        entries: Sequence[UndoRecord],
        *,
        actor: str,
        confirm_drift: bool,
    ) -> UndoResult | None:
        """Mark a committed transaction UNDOING, unless its objects drifted and no person
        confirmed overwriting them (then nothing is written and the drift is returned)."""
        drifts = tuple(
            d for d in (self._engine.restorer.drift(e) for e in entries) if d is not None
        )
        if drifts and not confirm_drift:
            self._audit(AuditVerb.UNDO_DRIFT, tx, actor, {"drift": [d.summary() for d in drifts]})
            return UndoResult(
                transaction_id=tx.id,
                status=UndoStatus.DRIFT,
                message="objects changed since this transaction; confirm to overwrite: "
                + "; ".join(d.summary() for d in drifts),
                drift=drifts,
            )
        self._ledger.set_status(tx.id, TransactionStatus.UNDOING, fencing_token=lock.token)
        self._audit(
            AuditVerb.UNDO, tx, actor, {"entries": len(entries), "confirm_drift": confirm_drift}
        )
        return None

    def _restore_entries(
        self,
        tx: TransactionRecord,
        lock: WriterLock,
        entries: Sequence[UndoRecord],
        *,
        actor: str,
        emit: ProgressCallback | None,
    ) -> tuple[int, dict[str, object]]:
        """Restore each entry's snapshot in stack order; how many, and what they overwrote."""
        restored = 0
        overwritten: dict[str, object] = {}
        for entry in entries:
            result = self._engine.restorer.restore(
                entry, lock, scope=tx.scope, actor=actor, verb=AuditVerb.UNDO_RESTORE
            )
            restored += 1
            if result.overwritten:
                overwritten[str(entry.target)] = result.overwritten
            if emit is not None:
                emit(
                    Progress(
                        transaction_id=tx.id,
                        step=Step.UNDO,
                        message=f"Restored {entry.target}",
                        done=restored,
                        total=len(entries),
                    )
                )
            self._checkpoint("undo")
        return restored, overwritten

    def _record_undone(
        self,
        tx: TransactionRecord,
        *,
        restored: int,
        total: int,
        overwritten: dict[str, object],
        actor: str,
        emit: ProgressCallback | None,
    ) -> UndoResult:
        """Measure the scope, mark the transaction UNDONE and audit it."""
        after = self._engine.measure(tx.scope)
        # An incomplete figure is a lower bound: recorded as unknown, never as a μ.
        mu_after = after.mu if after.complete else None
        self._ledger.set_status(
            tx.id,
            TransactionStatus.UNDONE,
            mu_after=mu_after,
            mu_after_unknown=mu_after is None,
            reason=f"undone by {actor}",
            ended_at=self._engine.clock.now(),
        )
        self._audit(
            AuditVerb.UNDONE,
            tx,
            actor,
            {
                "restored": restored,
                "overwritten": overwritten,
                "mu": mu_after,
                "unknown": list(after.unknown),
            },
        )
        if emit is not None:
            emit(
                Progress(
                    transaction_id=tx.id,
                    step=Step.UNDONE,
                    message="Undone",
                    done=restored,
                    total=total,
                    mu=mu_after,
                )
            )
        unknown = (
            "" if after.complete else f"; μ now unknown (cannot measure {after.unknown_text()})"
        )
        return UndoResult(
            transaction_id=tx.id,
            status=UndoStatus.UNDONE,
            message=f"restored {restored} object(s){unknown}",
            restored=restored,
            overwritten=overwritten,
            mu_after=mu_after,
        )

    def _finish_held(self, tx: TransactionRecord, *, actor: str) -> UndoResult:
        """Finish the rollback of a held transaction: restore what is left on its stack,
        then measure. Still held (the cluster still cannot be read) is a failure to say."""
        lock = self._lock(tx)
        if isinstance(lock, UndoResult):
            return lock
        try:
            fresh = self._ledger.transaction(tx.id)  # another worker may have finished it
            if fresh.status is not TransactionStatus.HELD:
                return UndoResult(
                    transaction_id=tx.id,
                    status=UndoStatus.REFUSED,
                    message=f"transaction {tx.id} is {fresh.status} now; nothing left to finish",
                )
            outcome = self._engine.resume_abort(fresh, lock, actor=actor)
        finally:
            lock.release()
        if outcome.kind is OutcomeKind.HELD:
            return UndoResult(
                transaction_id=tx.id,
                status=UndoStatus.FAILED,
                message=f"still held: {outcome.reason}",
                restored=outcome.restored,
                mu_after=outcome.mu_after,
            )
        return UndoResult(
            transaction_id=tx.id,
            status=UndoStatus.UNDONE,
            message=f"finished the rollback ({outcome.kind}): restored {outcome.restored} "
            f"object(s); {outcome.reason}",
            restored=outcome.restored,
            mu_after=outcome.mu_after,
        )

    def resume(self, tx: TransactionRecord, lock: WriterLock, *, actor: str) -> UndoResult:
        """Finish an undo a crash interrupted (the drift decision was already taken)."""
        return self._undo_locked(tx, lock, actor=actor, confirm_drift=True, emit=None)
