"""The audit trail: every dry run, snapshot, write, validation, commit, abort, restore, undo,
approval, refusal and lock event, append-only (DESIGN section 3)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlmodel import col, select

from storage.records import AuditVerb, StoredAudit
from storage.repos.base import Repository, narrowed, record_of, row_of
from storage.tables import AuditRow


class AuditRepository(Repository):
    def append(self, record: StoredAudit) -> StoredAudit:
        return self.append_many([record])[0]

    def append_many(self, records: Sequence[StoredAudit]) -> list[StoredAudit]:
        """Append, all or nothing. A verb outside `AuditVerb` is refused (`ValueError`) before
        anything is written: a misspelt verb would be a record no reader ever finds."""
        rows = [row_of(r, AuditRow) for r in records]
        for row in rows:
            row.verb = AuditVerb(row.verb).value
        with self._db.write() as s:
            s.add_all(rows)
            s.flush()
            return [_record(row) for row in rows]

    def query(
        self,
        *,
        incident_id: str | None = None,
        transaction_id: str | None = None,
        verb: AuditVerb | Sequence[AuditVerb] | None = None,
        actor: str | None = None,
        scope: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 1000,
    ) -> list[StoredAudit]:
        """Matching records in the order they were written (`since` inclusive, `until`
        exclusive)."""
        query = narrowed(
            select(AuditRow),
            AuditRow,
            since=since,
            until=until,
            incident_id=incident_id,
            transaction_id=transaction_id,
            actor=actor,
            scope=scope,
        )
        if verb is not None:
            verbs = (verb,) if isinstance(verb, str) else tuple(verb)
            query = query.where(col(AuditRow.verb).in_(verbs))
        query = query.order_by(col(AuditRow.at), col(AuditRow.id)).limit(limit)
        with self._db.read() as s:
            return [_record(row) for row in s.exec(query)]


def _record(row: AuditRow) -> StoredAudit:
    record = record_of(row, StoredAudit)
    record.verb = AuditVerb(row.verb)
    return record
