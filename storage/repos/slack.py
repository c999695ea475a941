"""Where Stratus's Slack messages are, so that it updates them in place (the pinned summary,
a plan's buttons, a transaction's progress) instead of posting new ones."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session, col, select, update

from storage.errors import NotFound
from storage.records import StoredSlackMessage
from storage.repos.base import Repository, given, narrowed, record_of, values_of
from storage.tables import SlackMessageRow


class SlackMessageRepository(Repository):
    def save(self, message: StoredSlackMessage) -> StoredSlackMessage:
        """Insert, or update the message already stored at (channel, ts): its kind, ref,
        thread and updated_at change, its created_at stays."""
        insert = self._insert(SlackMessageRow).values(values_of(message))
        statement = insert.on_conflict_do_update(
            index_elements=["channel", "ts"],
            set_={
                "incident_id": insert.excluded.incident_id,
                "thread_ts": insert.excluded.thread_ts,
                "kind": insert.excluded.kind,
                "ref": insert.excluded.ref,
                "updated_at": insert.excluded.updated_at,
            },
        )
        with self._db.write() as s:
            s.exec(statement)
            return self._get(s, message.channel, message.ts)

    def get(self, channel: str, ts: str) -> StoredSlackMessage:
        with self._db.read() as s:
            return self._get(s, channel, ts)

    def find(
        self,
        *,
        incident_id: str | None = None,
        kind: str | None = None,
        ref: str | None = None,
    ) -> list[StoredSlackMessage]:
        """Messages matching every given field, oldest first."""
        query = narrowed(
            select(SlackMessageRow), SlackMessageRow, incident_id=incident_id, kind=kind, ref=ref
        )
        query = query.order_by(col(SlackMessageRow.created_at), col(SlackMessageRow.id))
        return self._all(query, StoredSlackMessage)

    def update(
        self,
        channel: str,
        ts: str,
        *,
        at: datetime,
        kind: str | None = None,
        ref: str | None = None,
        thread_ts: str | None = None,
    ) -> StoredSlackMessage:
        """Record that the message was updated (and what it now shows). Raises `NotFound`."""
        values = {"updated_at": at, **given(kind=kind, ref=ref, thread_ts=thread_ts)}
        with self._db.write() as s:
            statement = (
                update(SlackMessageRow)
                .where(col(SlackMessageRow.channel) == channel)
                .where(col(SlackMessageRow.ts) == ts)
                .values(**values)
            )
            if s.exec(statement).rowcount == 0:
                raise NotFound(f"slack message {channel}/{ts}")
            return self._get(s, channel, ts)

    @staticmethod
    def _get(s: Session, channel: str, ts: str) -> StoredSlackMessage:
        row = s.exec(
            select(SlackMessageRow)
            .where(col(SlackMessageRow.channel) == channel)
            .where(col(SlackMessageRow.ts) == ts)
            .execution_options(populate_existing=True)
        ).first()
        if row is None:
            raise NotFound(f"slack message {channel}/{ts}")
        return record_of(row, StoredSlackMessage)
