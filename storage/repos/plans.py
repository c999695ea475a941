"""Plans. `set_status` is a compare-and-set on the current status: when two approvals arrive
at once, both try `proposed → approved` and exactly one succeeds, so exactly one transaction
starts."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from datetime import datetime

from sqlmodel import col, select, update

from storage.errors import NotFound
from storage.records import StoredPlan
from storage.repos.base import Repository, as_tuple, given, narrowed, record_of, records_of, row_of
from storage.tables import PlanRow

logger = logging.getLogger(__name__)


class PlanRepository(Repository):
    def create(self, plan: StoredPlan) -> StoredPlan:
        return self.create_many([plan])[0]

    def create_many(self, plans: Sequence[StoredPlan]) -> list[StoredPlan]:
        """A ranked set of alternatives, all or nothing. Raises `Conflict` on a known id."""
        rows = [row_of(p, PlanRow) for p in plans]
        with self._db.write() as s:
            s.add_all(rows)
            s.flush()
            return [record_of(row, StoredPlan) for row in rows]

    def get(self, plan_id: str) -> StoredPlan:
        with self._db.read() as s:
            row = s.get(PlanRow, plan_id)
        if row is None:
            raise NotFound(f"plan {plan_id}")
        return record_of(row, StoredPlan)

    def list_for_incident(
        self, incident_id: str, *, attempt: int | None = None
    ) -> list[StoredPlan]:
        """By attempt, then rank."""
        query = select(PlanRow).where(col(PlanRow.incident_id) == incident_id)
        query = narrowed(query, PlanRow, attempt=attempt)
        query = query.order_by(col(PlanRow.attempt), col(PlanRow.rank), col(PlanRow.created_at))
        with self._db.read() as s:
            return records_of(s.exec(query), StoredPlan)

    def list_by_status(self, *statuses: str) -> list[StoredPlan]:
        query = (
            select(PlanRow)
            .where(col(PlanRow.status).in_(statuses))
            .order_by(col(PlanRow.created_at), col(PlanRow.id))
        )
        with self._db.read() as s:
            return records_of(s.exec(query), StoredPlan)

    def set_status(
        self,
        plan_id: str,
        status: str,
        *,
        expected: str | Collection[str] | None = None,
        decided_at: datetime | None = None,
        decided_by: str | None = None,
        reject_reason: str | None = None,
    ) -> bool:
        """Set the status (and who decided, when, why). With `expected`, only if the plan is
        still in (one of) those statuses; False when it moved on. Raises `NotFound`."""
        values = {
            "status": status,
            **given(decided_at=decided_at, decided_by=decided_by, reject_reason=reject_reason),
        }
        with self._db.write() as s:
            statement = update(PlanRow).where(col(PlanRow.id) == plan_id)
            if expected is not None:
                statement = statement.where(col(PlanRow.status).in_(as_tuple(expected)))
            if s.exec(statement.values(**values)).rowcount == 1:
                return True
            current = s.get(PlanRow, plan_id)
            if current is None:
                raise NotFound(f"plan {plan_id}")
            logger.info(
                "plan %s: not set to %s, it is %s (expected %s)",
                plan_id,
                status,
                current.status,
                expected,
            )
            return False
