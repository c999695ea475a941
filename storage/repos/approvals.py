"""Approvals, bound to a plan's content hash and valid until they expire.

Adding is idempotent per user: a second click by the same person leaves one approval (it is
refreshed if the first had expired or approved other contents), so a double click can never
satisfy a two-person rule.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import or_
from sqlmodel import col, func, select
from sqlmodel.sql.expression import SelectOfScalar

from storage.records import StoredApproval
from storage.repos.base import Repository, record_of, records_of, table_of, values_of
from storage.tables import ApprovalRow


class ApprovalRepository(Repository):
    def add(self, approval: StoredApproval) -> StoredApproval:
        """Record `approval.user_id`'s approval of the plan; returns the stored approval.
        Raises `Conflict` when the plan does not exist."""
        table = table_of(ApprovalRow)
        insert = self._insert(ApprovalRow).values(values_of(approval))
        statement = insert.on_conflict_do_update(
            index_elements=["plan_id", "user_id"],
            set_={
                "content_hash": insert.excluded.content_hash,
                "created_at": insert.excluded.created_at,
                "expires_at": insert.excluded.expires_at,
            },
            where=or_(
                table.c.content_hash != insert.excluded.content_hash,
                table.c.expires_at <= insert.excluded.created_at,
            ),
        )
        with self._db.write() as s:
            s.exec(statement)
            row = s.exec(
                select(ApprovalRow)
                .where(col(ApprovalRow.plan_id) == approval.plan_id)
                .where(col(ApprovalRow.user_id) == approval.user_id)
            ).one()
            return record_of(row, StoredApproval)

    def list_for_plan(self, plan_id: str) -> list[StoredApproval]:
        query = (
            select(ApprovalRow)
            .where(col(ApprovalRow.plan_id) == plan_id)
            .order_by(col(ApprovalRow.created_at), col(ApprovalRow.id))
        )
        return self._all(query, StoredApproval)

    def list_valid(self, plan_id: str, content_hash: str, at: datetime) -> list[StoredApproval]:
        """Approvals of exactly these contents, given by `at` and not expired at `at`."""
        with self._db.read() as s:
            return records_of(s.exec(self._valid(plan_id, content_hash, at)), StoredApproval)

    def count_valid(self, plan_id: str, content_hash: str, at: datetime) -> int:
        """How many distinct people approved exactly these contents and still count at `at`."""
        query = select(func.count()).select_from(self._valid(plan_id, content_hash, at).subquery())
        with self._db.read() as s:
            return s.exec(query).one()

    @staticmethod
    def _valid(plan_id: str, content_hash: str, at: datetime) -> SelectOfScalar[ApprovalRow]:
        return (
            select(ApprovalRow)
            .where(col(ApprovalRow.plan_id) == plan_id)
            .where(col(ApprovalRow.content_hash) == content_hash)
            .where(col(ApprovalRow.created_at) <= at)
            .where(col(ApprovalRow.expires_at) > at)
            .order_by(col(ApprovalRow.created_at), col(ApprovalRow.id))
        )
