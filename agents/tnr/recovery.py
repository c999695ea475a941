"""Recovery: bring every transaction a crash interrupted to a consistent end (rule 3).

Run at start, and periodically by the bot so that a transaction whose writer died on another
replica is finished once its lease expires. A scope whose lease another live writer holds is
left alone.

    open        → roll back what was written (its validation never ran)
    validating  → commit when a passing validation was recorded, else roll back
    aborting    → finish the rollback
    undoing     → finish the undo
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from agents.errors import ClusterError, LockLost
from agents.model import Outcome, OutcomeKind, TransactionId, TransactionStatus
from agents.tnr.engine import TransactionEngine
from agents.tnr.lock import LockBusy
from agents.tnr.undo import Undoer

logger = logging.getLogger(__name__)

ACTOR = "recovery"


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovered:
    transaction_id: TransactionId
    was: TransactionStatus
    outcome: OutcomeKind | None  # None when the scope was busy (left for later)
    message: str


def recover(
    engine: TransactionEngine,
    undoer: Undoer,
    *,
    only: TransactionId | None = None,
    wait_s: float = 0.0,
) -> list[Recovered]:
    """Finish interrupted transactions whose scope no live writer holds. `wait_s`: how long
    to wait for a dead writer's lease to expire (at start-up, its lease outlives it)."""
    results: list[Recovered] = []
    for tx in engine.ledger.interrupted():
        if only is not None and tx.id != only:
            continue
        lock = engine.lock(tx.scope, wait_s=wait_s)
        try:
            lock.acquire()
        except LockBusy:
            results.append(
                Recovered(
                    transaction_id=tx.id,
                    was=tx.status,
                    outcome=None,
                    message="scope busy; left for later",
                )
            )
            continue
        try:
            fresh = engine.ledger.transaction(tx.id)  # it may have moved on while we waited
            outcome: Outcome | None = None
            if (
                fresh.status is TransactionStatus.VALIDATING
                and fresh.validation.get("passed") is True
            ):
                outcome = engine.commit_recorded(fresh, actor=ACTOR)
            elif fresh.status in (
                TransactionStatus.OPEN,
                TransactionStatus.VALIDATING,
                TransactionStatus.ABORTING,
            ):
                outcome = engine.resume_abort(fresh, lock, actor=ACTOR)
            elif fresh.status is TransactionStatus.UNDOING:
                result = undoer.resume(fresh, lock, actor=ACTOR)
                results.append(
                    Recovered(
                        transaction_id=tx.id,
                        was=tx.status,
                        outcome=None,
                        message=f"undo finished: {result.message}",
                    )
                )
                continue
            if outcome is not None:
                logger.info("recovered transaction %s (%s) → %s", tx.id, tx.status, outcome.kind)
                results.append(
                    Recovered(
                        transaction_id=tx.id,
                        was=tx.status,
                        outcome=outcome.kind,
                        message=outcome.reason,
                    )
                )
        except (ClusterError, LockLost) as e:
            logger.exception("recovery of transaction %s failed", tx.id)
            results.append(
                Recovered(
                    transaction_id=tx.id,
                    was=tx.status,
                    outcome=None,
                    message=f"recovery failed: {e}",
                )
            )
        finally:
            lock.release()
    return results
