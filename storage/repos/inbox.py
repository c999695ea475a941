"""The alert inbox (`alert_inbox`): a follower records alerts, the leader takes them.

`take` reads the oldest entries of one cluster; `remove` deletes them once ingested. A leader
that dies between the two leaves them for the next leader, which ingests them again: an alert
is identified by its fingerprint, so a second ingest adds nothing to an incident.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlmodel import col, delete, select

from storage.repos.base import Repository
from storage.tables import InboxRow

#: (entry id, the alerts as the follower encoded them)
InboxEntry = tuple[int, list[dict[str, Any]]]


class InboxRepository(Repository):
    def put(self, cluster: str, alerts: Sequence[dict[str, Any]], at: datetime) -> int:
        row = InboxRow(cluster=cluster, received_at=at, alerts=list(alerts))
        with self._db.write() as s:
            s.add(row)
            s.flush()
            assert row.id is not None
            return row.id

    def take(self, cluster: str, *, limit: int = 100) -> list[InboxEntry]:
        query = (
            select(InboxRow)
            .where(col(InboxRow.cluster) == cluster)
            .order_by(col(InboxRow.id))
            .limit(limit)
        )
        with self._db.read() as s:
            return [(row.id, list(row.alerts)) for row in s.exec(query) if row.id is not None]

    def remove(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._db.write() as s:
            s.exec(delete(InboxRow).where(col(InboxRow.id).in_(list(ids))))

    def count(self, cluster: str) -> int:
        with self._db.read() as s:
            return len(list(s.exec(select(InboxRow.id).where(col(InboxRow.cluster) == cluster))))
