"""Incidents, their alerts and their timeline.

A state change and the timeline event that records it are written in one database
transaction, guarded by compare-and-set on the current state: two workers that both try to
move one incident cannot both succeed, and no transition is ever persisted without its event
(DESIGN section 2: every transition is persisted before it is announced).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select, update

from storage.errors import NotFound
from storage.records import StoredAlert, StoredIncident, StoredTimelineEvent
from storage.repos.base import (
    Repository,
    as_tuple,
    given,
    narrowed,
    record_of,
    records_of,
    row_of,
    table_of,
    values_of,
)
from storage.tables import IncidentAlertRow, IncidentRow, TimelineEventRow
from storage.vocabulary import INCIDENT_CLOSED

logger = logging.getLogger(__name__)


class IncidentRepository(Repository):
    # ------------------------------------------------------------------------- create, read

    def create(
        self,
        incident: StoredIncident,
        *,
        alerts: Sequence[StoredAlert] = (),
        events: Sequence[StoredTimelineEvent] = (),
    ) -> StoredIncident:
        """Insert an incident with its first alerts and timeline events, all or nothing.
        Raises `Conflict` when the id exists."""
        row = row_of(incident, IncidentRow)
        with self._db.write() as s:
            s.add(row)
            s.flush()  # the parent row first: the children refer to it
            for alert in alerts:
                s.add(row_of(alert, IncidentAlertRow))
            for event in events:
                s.add(row_of(event, TimelineEventRow))
            return record_of(row, StoredIncident)

    def get(self, incident_id: str) -> StoredIncident:
        with self._db.read() as s:
            return _get(s, incident_id)

    def list_open(
        self, *, cluster: str | None = None, namespace: str | None = None
    ) -> list[StoredIncident]:
        """Incidents not yet closed, oldest first (a restart resumes each of them)."""
        query = select(IncidentRow).where(col(IncidentRow.state) != INCIDENT_CLOSED)
        query = narrowed(query, IncidentRow, cluster=cluster, namespace=namespace)
        with self._db.read() as s:
            return records_of(
                s.exec(query.order_by(col(IncidentRow.opened_at), col(IncidentRow.id))),
                StoredIncident,
            )

    def list_by_state(self, *states: str) -> list[StoredIncident]:
        query = (
            select(IncidentRow)
            .where(col(IncidentRow.state).in_(states))
            .order_by(col(IncidentRow.opened_at), col(IncidentRow.id))
        )
        return self._all(query, StoredIncident)

    def find_open_by_group_key(self, group_key: str) -> StoredIncident | None:
        """The newest open incident whose alerts share `group_key`."""
        query = (
            select(IncidentRow)
            .where(col(IncidentRow.group_key) == group_key)
            .where(col(IncidentRow.state) != INCIDENT_CLOSED)
            .order_by(col(IncidentRow.opened_at).desc())
            .limit(1)
        )
        with self._db.read() as s:
            return _first(s.exec(query).first())

    def find_open_by_fingerprint(self, fingerprint: str) -> StoredIncident | None:
        """The newest open incident that already holds an alert with `fingerprint`."""
        query = (
            select(IncidentRow)
            .join(IncidentAlertRow, col(IncidentAlertRow.incident_id) == col(IncidentRow.id))
            .where(col(IncidentAlertRow.fingerprint) == fingerprint)
            .where(col(IncidentRow.state) != INCIDENT_CLOSED)
            .order_by(col(IncidentRow.opened_at).desc())
            .limit(1)
        )
        with self._db.read() as s:
            return _first(s.exec(query).first())

    def list_closed(
        self,
        *,
        limit: int = 200,
        cluster: str | None = None,
        since: datetime | None = None,
    ) -> list[StoredIncident]:
        """Closed incidents, newest first: the corpus of similar-incident search."""
        query = select(IncidentRow).where(col(IncidentRow.state) == INCIDENT_CLOSED)
        query = narrowed(query, IncidentRow, since=since, at="closed_at", cluster=cluster)
        query = query.order_by(col(IncidentRow.closed_at).desc(), col(IncidentRow.id)).limit(limit)
        return self._all(query, StoredIncident)

    # ------------------------------------------------------------------------- state changes

    def transition(
        self,
        incident_id: str,
        new_state: str,
        *,
        at: datetime,
        message: str,
        expected: str | Collection[str] | None = None,
        kind: str = "transition",
        data: dict[str, Any] | None = None,
        mu: float | None = None,
        attempt: int | None = None,
    ) -> bool:
        """Move the incident to `new_state` and append its timeline event, in one transaction.

        With `expected`, the move happens only if the incident is still in (one of) those
        states; otherwise nothing is written and the result is False. Raises `NotFound`.
        """
        values = {"state": new_state, "updated_at": at, **given(mu=mu, attempt=attempt)}
        event = TimelineEventRow(
            incident_id=incident_id,
            at=at,
            state=new_state,
            kind=kind,
            message=message,
            data=data or {},
        )
        return self._move(incident_id, expected, values, event)

    def close(
        self,
        incident_id: str,
        *,
        at: datetime,
        message: str,
        summary: str | None = None,
        root_cause_service: str | None = None,
        category: str | None = None,
        resolution: str | None = None,
        expected: str | Collection[str] | None = None,
        data: dict[str, Any] | None = None,
    ) -> bool:
        """Close the incident with the fields similar-incident search reads; same guard and
        atomicity as `transition`."""
        values = {
            "state": INCIDENT_CLOSED,
            "updated_at": at,
            "closed_at": at,
            "summary": summary,
            "root_cause_service": root_cause_service,
            "category": category,
            "resolution": resolution,
        }
        event = TimelineEventRow(
            incident_id=incident_id,
            at=at,
            state=INCIDENT_CLOSED,
            kind="transition",
            message=message,
            data=data or {},
        )
        return self._move(incident_id, expected, values, event)

    def update(
        self,
        incident_id: str,
        *,
        at: datetime,
        mu: float | None = None,
        attempt: int | None = None,
        title: str | None = None,
        service: str | None = None,
    ) -> StoredIncident:
        """Change figures and labels that are not a state change (None leaves a field)."""
        values = {"updated_at": at, **given(mu=mu, attempt=attempt, title=title, service=service)}
        with self._db.write() as s:
            statement = update(IncidentRow).where(col(IncidentRow.id) == incident_id)
            if s.exec(statement.values(**values)).rowcount == 0:
                raise NotFound(f"incident {incident_id}")
            return _get(s, incident_id, populate=True)

    def _move(
        self,
        incident_id: str,
        expected: str | Collection[str] | None,
        values: dict[str, Any],
        event: TimelineEventRow,
    ) -> bool:
        with self._db.write() as s:
            statement = update(IncidentRow).where(col(IncidentRow.id) == incident_id)
            if expected is not None:
                statement = statement.where(col(IncidentRow.state).in_(as_tuple(expected)))
            if s.exec(statement.values(**values)).rowcount == 0:
                current = s.get(IncidentRow, incident_id)
                if current is None:
                    raise NotFound(f"incident {incident_id}")
                logger.info(
                    "incident %s: not moved to %s, it is %s (expected %s)",
                    incident_id,
                    values["state"],
                    current.state,
                    expected,
                )
                return False
            s.add(event)
        return True

    # ------------------------------------------------------------------------- timeline

    def add_event(self, event: StoredTimelineEvent) -> StoredTimelineEvent:
        """A timeline line that is not a state change (a note, an alert, an approval)."""
        return self._add(event, TimelineEventRow)

    def timeline(self, incident_id: str) -> list[StoredTimelineEvent]:
        query = (
            select(TimelineEventRow)
            .where(col(TimelineEventRow.incident_id) == incident_id)
            .order_by(col(TimelineEventRow.at), col(TimelineEventRow.id))
        )
        return self._all(query, StoredTimelineEvent)

    # ------------------------------------------------------------------------- alerts

    def record_alerts(self, alerts: Sequence[StoredAlert]) -> list[StoredAlert]:
        """Add alerts to their incidents, or update the ones already there (same incident and
        fingerprint): status, labels, annotations, ends_at and last_seen follow the newest
        report, first_seen stays, count goes up by one. One transaction for the batch."""
        table = table_of(IncidentAlertRow)
        keys: list[tuple[str, str]] = []
        with self._db.write() as s:
            for alert in alerts:
                insert = self._insert(IncidentAlertRow).values(values_of(alert))
                statement = insert.on_conflict_do_update(
                    index_elements=["incident_id", "fingerprint"],
                    set_={
                        "alertname": insert.excluded.alertname,
                        "status": insert.excluded.status,
                        "labels": insert.excluded.labels,
                        "annotations": insert.excluded.annotations,
                        "starts_at": insert.excluded.starts_at,
                        "ends_at": insert.excluded.ends_at,
                        "last_seen": insert.excluded.last_seen,
                        "count": table.c.count + 1,
                    },
                )
                s.exec(statement)
                keys.append((alert.incident_id, alert.fingerprint))
            return [
                record_of(
                    s.exec(
                        select(IncidentAlertRow)
                        .where(col(IncidentAlertRow.incident_id) == incident_id)
                        .where(col(IncidentAlertRow.fingerprint) == fingerprint)
                    ).one(),
                    StoredAlert,
                )
                for incident_id, fingerprint in keys
            ]

    def alerts(self, incident_id: str) -> list[StoredAlert]:
        query = (
            select(IncidentAlertRow)
            .where(col(IncidentAlertRow.incident_id) == incident_id)
            .order_by(col(IncidentAlertRow.first_seen), col(IncidentAlertRow.id))
        )
        return self._all(query, StoredAlert)


def _get(s: Session, incident_id: str, *, populate: bool = False) -> StoredIncident:
    row = s.get(IncidentRow, incident_id, populate_existing=populate)
    if row is None:
        raise NotFound(f"incident {incident_id}")
    return record_of(row, StoredIncident)


def _first(row: IncidentRow | None) -> StoredIncident | None:
    return None if row is None else record_of(row, StoredIncident)
