"""Plans. `set_status` is a compare-and-set on the current status: when two approvals arrive
at once, both try `proposed → approved` and exactly one succeeds, so exactly one transaction
starts."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlmodel import col, select

from storage.records import StoredPlan
from storage.repos.base import Repository, given, narrowed, record_of, row_of
from storage.tables import PlanRow


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
        return self._fetch(PlanRow, plan_id, StoredPlan, f"plan {plan_id}")

    def list_for_incident(
        self, incident_id: str, *, attempt: int | None = None
    ) -> list[StoredPlan]:
        """By attempt, then rank."""
        query = select(PlanRow).where(col(PlanRow.incident_id) == incident_id)
        query = narrowed(query, PlanRow, attempt=attempt)
        query = query.order_by(col(PlanRow.attempt), col(PlanRow.rank), col(PlanRow.created_at))
        return self._all(query, StoredPlan)

    def list_by_status(self, *statuses: str) -> list[StoredPlan]:
        query = (
            select(PlanRow)
            .where(col(PlanRow.status).in_(statuses))
            .order_by(col(PlanRow.created_at), col(PlanRow.id))
        )
        return self._all(query, StoredPlan)

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
        return self._set_status(PlanRow, plan_id, values, expected, f"plan {plan_id}")
