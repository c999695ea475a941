"""Undo requests forwarded between the deployments of several clusters (`undo_requests`).

The deployment a click reached `put`s the request for the cluster that made the change; that
cluster's leader `take`s its requests, runs each Undo, and `remove`s it once run. A leader
that dies in between leaves it for the next, whose Undo of an undone transaction changes
nothing (the undo stack says it is undone).

Times are the database's (`database_now`): the deployment that records a request and the one
that runs it are in different clusters, and their clocks need not agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import col, delete, select

from storage.db import database_now
from storage.repos.base import Repository, record_of
from storage.tables import UndoRequestRow


@dataclass(frozen=True, slots=True, kw_only=True)
class UndoRequest:
    id: int
    cluster: str
    transaction_id: str
    user: str
    channel: str | None
    view_id: str | None
    confirm_drift: bool
    requested_at: datetime
    via: str
    age_s: float  # how long it has waited, by the database's clock when it was taken


class UndoRequestRepository(Repository):
    def put(
        self,
        *,
        cluster: str,
        transaction_id: str,
        user: str,
        channel: str | None,
        view_id: str | None,
        confirm_drift: bool,
        via: str,
    ) -> int:
        with self._db.write() as s:
            row = UndoRequestRow(
                cluster=cluster,
                transaction_id=transaction_id,
                user=user,
                channel=channel,
                view_id=view_id,
                confirm_drift=confirm_drift,
                requested_at=database_now(s, self._db.dialect),
                via=via,
            )
            s.add(row)
            s.flush()
            assert row.id is not None
            return row.id

    def take(self, cluster: str, *, limit: int = 50) -> list[UndoRequest]:
        """The oldest requests for `cluster`'s deployment."""
        query = (
            select(UndoRequestRow)
            .where(col(UndoRequestRow.cluster) == cluster)
            .order_by(col(UndoRequestRow.id))
            .limit(limit)
        )
        with self._db.read() as s:
            now = database_now(s, self._db.dialect)
            return [_request(row, now) for row in s.exec(query)]

    def remove(self, request_id: int) -> None:
        with self._db.write() as s:
            s.exec(delete(UndoRequestRow).where(col(UndoRequestRow.id) == request_id))


def _request(row: UndoRequestRow, now: datetime) -> UndoRequest:
    assert row.id is not None
    return record_of(row, UndoRequest, age_s=max((now - row.requested_at).total_seconds(), 0.0))
