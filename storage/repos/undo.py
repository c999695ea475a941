"""The write-ahead undo stack (DESIGN section 3, rules 3, 6 and 7).

The engine `push`es an entry — the snapshot of what it is about to change — and only then
writes; after the write it records the resourceVersion it produced (`mark_applied`). Abort and
Undo pop the stack last-in first-out and mark each entry restored (or skipped when its write
never happened). Across transactions, a later transaction on the same objects must be undone
first: `committed_stack` and `later_transactions` answer that.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import ColumnElement, and_, or_
from sqlmodel import Session, col, func, select, update

from storage.errors import NotFound
from storage.records import StoredUndoEntry
from storage.repos.base import Repository, given, record_of, row_of
from storage.tables import TransactionRow, UndoEntryRow
from storage.vocabulary import (
    TRANSACTION_COMMITTED,
    UNDO_APPLIED,
    UNDO_PENDING,
    UNDO_RESTORED,
    UNDO_SKIPPED,
)

logger = logging.getLogger(__name__)


class ObjectKey(Protocol):
    """What identifies an object for stacking (`agents.model.ObjectRef` fits)."""

    @property
    def kind(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str | None: ...


class UndoRepository(Repository):
    def push(self, entry: StoredUndoEntry) -> StoredUndoEntry:
        """Persist `entry` on top of its transaction's stack, as `pending`, before the write it
        covers. Its `seq` is assigned here (1, 2, ...). Raises `Conflict` when the transaction
        does not exist."""
        row = row_of(entry, UndoEntryRow)
        row.state = UNDO_PENDING
        with self._db.write() as s:
            top = s.exec(
                select(func.max(col(UndoEntryRow.seq))).where(
                    col(UndoEntryRow.transaction_id) == entry.transaction_id
                )
            ).one()
            row.seq = (top or 0) + 1
            s.add(row)
            s.flush()
            return record_of(row, StoredUndoEntry)

    def get(self, entry_id: str) -> StoredUndoEntry:
        return self._fetch(UndoEntryRow, entry_id, StoredUndoEntry, f"undo entry {entry_id}")

    def mark_applied(
        self,
        entry_id: str,
        *,
        produced_resource_version: str | None,
        at: datetime,
        produced: dict[str, Any] | None = None,
    ) -> bool:
        """The write happened and produced `produced_resource_version` (None when the write
        was a delete) and the object `produced`. Only from `pending`; False otherwise."""
        return self._set_state(
            entry_id,
            UNDO_APPLIED,
            (UNDO_PENDING,),
            {
                "applied_at": at,
                "produced_resource_version": produced_resource_version,
                **given(produced=produced),
            },
        )

    def mark_restored(
        self, entry_id: str, *, at: datetime, overwritten: dict[str, Any] | None = None
    ) -> bool:
        """The snapshot was re-applied. `overwritten` keeps what a drift-confirmed undo wrote
        over. From `applied`, or from `pending` (a write that happened but was not recorded
        before a crash); False otherwise."""
        return self._set_state(
            entry_id,
            UNDO_RESTORED,
            (UNDO_APPLIED, UNDO_PENDING),
            {"restored_at": at, **given(overwritten=overwritten)},
        )

    def mark_skipped(self, entry_id: str, *, at: datetime) -> bool:
        """Nothing to restore: the write never happened. Only from `pending`."""
        return self._set_state(entry_id, UNDO_SKIPPED, (UNDO_PENDING,), {"restored_at": at})

    def _set_state(
        self, entry_id: str, state: str, expected: Collection[str], values: dict[str, Any]
    ) -> bool:
        with self._db.write() as s:
            statement = (
                update(UndoEntryRow)
                .where(col(UndoEntryRow.id) == entry_id)
                .where(col(UndoEntryRow.state).in_(expected))
                .values(state=state, **values)
            )
            if s.exec(statement).rowcount == 1:
                return True
            current = s.get(UndoEntryRow, entry_id)
            if current is None:
                raise NotFound(f"undo entry {entry_id}")
            logger.info("undo entry %s: not %s, it is %s", entry_id, state, current.state)
            return False

    def stack(self, transaction_id: str) -> list[StoredUndoEntry]:
        """The transaction's entries, top of the stack first (the order to pop them)."""
        query = (
            select(UndoEntryRow)
            .where(col(UndoEntryRow.transaction_id) == transaction_id)
            .order_by(col(UndoEntryRow.seq).desc())
        )
        return self._all(query, StoredUndoEntry)

    def committed_stack(self, targets: Iterable[ObjectKey]) -> list[StoredUndoEntry]:
        """Applied entries of committed transactions on any of `targets`, across
        transactions, in the order to undo them: the latest write first."""
        match = _targets(targets)
        if match is None:
            return []
        query = (
            select(UndoEntryRow)
            .join(TransactionRow, col(TransactionRow.id) == col(UndoEntryRow.transaction_id))
            .where(col(TransactionRow.status) == TRANSACTION_COMMITTED)
            .where(col(UndoEntryRow.state) == UNDO_APPLIED)
            .where(match)
            .order_by(
                col(UndoEntryRow.applied_at).desc(),
                col(TransactionRow.started_at).desc(),
                col(UndoEntryRow.seq).desc(),
            )
        )
        return self._all(query, StoredUndoEntry)

    def later_transactions(self, transaction_id: str) -> list[str]:
        """Committed transactions started after `transaction_id` that changed any object it
        changed in the same cluster, newest first: they must be undone before it can be.
        (Several clusters' deployments share the store, and their objects' names collide:
        `hotel/geo` in east is not `hotel/geo` in west.)"""
        with self._db.read() as s:
            base = s.get(TransactionRow, transaction_id)
            if base is None:
                raise NotFound(f"transaction {transaction_id}")
            match = _targets(_entries_of(s, transaction_id))
            if match is None:
                return []
            query = (
                select(TransactionRow.id, TransactionRow.started_at)
                .join(UndoEntryRow, col(UndoEntryRow.transaction_id) == col(TransactionRow.id))
                .where(col(TransactionRow.id) != transaction_id)
                .where(col(TransactionRow.cluster) == base.cluster)
                .where(col(TransactionRow.status) == TRANSACTION_COMMITTED)
                .where(col(TransactionRow.started_at) > base.started_at)
                .where(col(UndoEntryRow.state) == UNDO_APPLIED)
                .where(match)
                .distinct()
                .order_by(col(TransactionRow.started_at).desc(), col(TransactionRow.id).desc())
            )
            return [row[0] for row in s.exec(query)]


class _Target:
    __slots__ = ("kind", "name", "namespace")

    def __init__(self, kind: str, name: str, namespace: str | None) -> None:
        self.kind = kind
        self.name = name
        self.namespace = namespace


def _entries_of(s: Session, transaction_id: str) -> list[_Target]:
    rows = s.exec(
        select(UndoEntryRow.target_kind, UndoEntryRow.target_name, UndoEntryRow.target_namespace)
        .where(col(UndoEntryRow.transaction_id) == transaction_id)
        .where(col(UndoEntryRow.state) == UNDO_APPLIED)
    )
    return [_Target(kind, name, namespace) for kind, name, namespace in rows]


def _targets(targets: Iterable[ObjectKey]) -> ColumnElement[bool] | None:
    clauses = [
        and_(
            col(UndoEntryRow.target_kind) == t.kind,
            col(UndoEntryRow.target_name) == t.name,
            col(UndoEntryRow.target_namespace).is_(None)
            if t.namespace is None
            else col(UndoEntryRow.target_namespace) == t.namespace,
        )
        for t in {(t.kind, t.name, t.namespace): t for t in targets}.values()
    ]
    return or_(*clauses) if clauses else None
