"""The change journal: who changed which watched object, when, and how (DESIGN section 5).

"What changed just before it broke" is a window query on a scope; "the last known-good
values" is the newest recorded state of an object before an instant.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlmodel import col, select

from storage.records import StoredJournalEntry
from storage.repos.base import Repository, narrowed, record_of, row_of
from storage.tables import JournalEntryRow

DELETED = "DELETED"


class JournalRepository(Repository):
    def append(self, entry: StoredJournalEntry) -> StoredJournalEntry:
        return self.append_many([entry])[0]

    def append_many(self, entries: Sequence[StoredJournalEntry]) -> list[StoredJournalEntry]:
        rows = [row_of(e, JournalEntryRow) for e in entries]
        with self._db.write() as s:
            s.add_all(rows)
            s.flush()
            return [record_of(row, StoredJournalEntry) for row in rows]

    def query(
        self,
        cluster: str,
        namespace: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        kind: str | None = None,
        name: str | None = None,
        limit: int = 500,
    ) -> list[StoredJournalEntry]:
        """Changes in a scope, oldest first (`since` inclusive, `until` exclusive)."""
        query = (
            select(JournalEntryRow)
            .where(col(JournalEntryRow.cluster) == cluster)
            .where(col(JournalEntryRow.namespace) == namespace)
        )
        query = narrowed(query, JournalEntryRow, since=since, until=until, kind=kind, name=name)
        query = query.order_by(col(JournalEntryRow.at), col(JournalEntryRow.id)).limit(limit)
        return self._all(query, StoredJournalEntry)

    def last_known_good(
        self, cluster: str, namespace: str, kind: str, name: str, *, before: datetime
    ) -> StoredJournalEntry | None:
        """The newest recorded state of the object strictly before `before` (a deletion has
        no state, so the state before it counts), or None when the journal has none."""
        query = (
            select(JournalEntryRow)
            .where(col(JournalEntryRow.cluster) == cluster)
            .where(col(JournalEntryRow.namespace) == namespace)
            .where(col(JournalEntryRow.kind) == kind)
            .where(col(JournalEntryRow.name) == name)
            .where(col(JournalEntryRow.at) < before)
            .where(col(JournalEntryRow.change_type) != DELETED)
            .where(col(JournalEntryRow.object).is_not(None))
            .order_by(col(JournalEntryRow.at).desc(), col(JournalEntryRow.id).desc())
            .limit(1)
        )
        with self._db.read() as s:
            row = s.exec(query).first()
            return None if row is None else record_of(row, StoredJournalEntry)
