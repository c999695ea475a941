"""Transactions: their status, figures and validation, and the queries a restart and an undo
need (which transactions were cut short; which committed ones touch a scope)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlmodel import col, select, update

from storage.errors import NotFound
from storage.records import StoredTransaction
from storage.repos.base import Repository, given, record_of
from storage.tables import TransactionRow
from storage.vocabulary import TRANSACTION_COMMITTED, TRANSACTION_INTERRUPTED


class TransactionRepository(Repository):
    def create(self, transaction: StoredTransaction) -> StoredTransaction:
        return self._add(transaction, TransactionRow)

    def get(self, transaction_id: str) -> StoredTransaction:
        return self._fetch(
            TransactionRow, transaction_id, StoredTransaction, f"transaction {transaction_id}"
        )

    def set_status(
        self,
        transaction_id: str,
        status: str,
        *,
        expected: str | Collection[str] | None = None,
        ended_at: datetime | None = None,
        reason: str | None = None,
        mu_after: float | None = None,
        validation: dict[str, Any] | None = None,
        mu_after_unknown: bool = False,
    ) -> bool:
        """Set the status (with the figures that decided it). With `expected`, only if the
        transaction is still in (one of) those statuses; False when it moved on.
        `mu_after_unknown`: clear μ_after (it could not be measured)."""
        values = {
            "status": status,
            **given(ended_at=ended_at, reason=reason, mu_after=mu_after, validation=validation),
        }
        if mu_after_unknown:
            values["mu_after"] = None
        return self._set_status(
            TransactionRow, transaction_id, values, expected, f"transaction {transaction_id}"
        )

    def set_figures(
        self,
        transaction_id: str,
        *,
        mu0: float | None = None,
        mu_before: float | None = None,
        mu_after: float | None = None,
        validation: dict[str, Any] | None = None,
        deadline_at: datetime | None = None,
        fencing_token: int | None = None,
    ) -> StoredTransaction:
        """Record measurements without a status change (None leaves a field)."""
        values = given(
            mu0=mu0,
            mu_before=mu_before,
            mu_after=mu_after,
            validation=validation,
            deadline_at=deadline_at,
            fencing_token=fencing_token,
        )
        with self._db.write() as s:
            if values:
                statement = update(TransactionRow).where(col(TransactionRow.id) == transaction_id)
                s.exec(statement.values(**values))
            row = s.get(TransactionRow, transaction_id, populate_existing=True)
            if row is None:
                raise NotFound(f"transaction {transaction_id}")
            return record_of(row, StoredTransaction)

    def list_interrupted(self) -> list[StoredTransaction]:
        """Transactions a crash or restart cut short (open, validating, aborting), oldest
        first: each must be finished or rolled back from its undo entries."""
        query = (
            select(TransactionRow)
            .where(col(TransactionRow.status).in_(TRANSACTION_INTERRUPTED))
            .order_by(col(TransactionRow.started_at), col(TransactionRow.id))
        )
        return self._all(query, StoredTransaction)

    def list_committed_for_scope(self, cluster: str, namespace: str) -> list[StoredTransaction]:
        """Committed transactions of a scope, newest first (the order they must be undone)."""
        query = (
            select(TransactionRow)
            .where(col(TransactionRow.cluster) == cluster)
            .where(col(TransactionRow.namespace) == namespace)
            .where(col(TransactionRow.status) == TRANSACTION_COMMITTED)
            .order_by(col(TransactionRow.started_at).desc(), col(TransactionRow.id).desc())
        )
        return self._all(query, StoredTransaction)

    def list_for_incident(self, incident_id: str) -> list[StoredTransaction]:
        query = (
            select(TransactionRow)
            .where(col(TransactionRow.incident_id) == incident_id)
            .order_by(col(TransactionRow.started_at), col(TransactionRow.id))
        )
        return self._all(query, StoredTransaction)
