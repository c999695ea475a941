"""Incidents and what hangs off them: their alerts, timeline, diagnoses and Slack messages.

States, kinds and statuses are stored as their string values (the `StrEnum`s of
`agents.model`); storage is the bottom layer and does not import the agents.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.tables.base import json_field, utc_field


class IncidentRow(SQLModel, table=True):
    __tablename__: ClassVar[str] = "incidents"
    __table_args__ = (
        Index("ix_incidents_cluster_namespace_state", "cluster", "namespace", "state"),
    )

    id: str = Field(primary_key=True)
    title: str
    cluster: str
    namespace: str
    state: str = Field(index=True)
    service: str | None = None
    source: str = "alertmanager"
    mu0: float
    mu: float | None = None
    attempt: int = 0
    opened_at: datetime = utc_field()
    updated_at: datetime = utc_field()
    closed_at: datetime | None = utc_field(nullable=True, index=True)
    #: The grouping key of the incident's alerts: later alerts with the same key join it.
    group_key: str = Field(index=True)
    # Filled at close; what similar-incident search reads.
    summary: str | None = None
    root_cause_service: str | None = None
    category: str | None = None
    resolution: str | None = None


class IncidentAlertRow(SQLModel, table=True):
    __tablename__: ClassVar[str] = "incident_alerts"
    __table_args__ = (UniqueConstraint("incident_id", "fingerprint"),)

    id: int | None = Field(default=None, primary_key=True)
    incident_id: str = Field(foreign_key="incidents.id")
    fingerprint: str = Field(index=True)
    alertname: str
    status: str
    labels: dict[str, Any] = json_field()
    annotations: dict[str, Any] = json_field()
    starts_at: datetime = utc_field()
    ends_at: datetime | None = utc_field(nullable=True)
    first_seen: datetime = utc_field()
    last_seen: datetime = utc_field()
    count: int = 1


class TimelineEventRow(SQLModel, table=True):
    __tablename__: ClassVar[str] = "timeline_events"

    id: int | None = Field(default=None, primary_key=True)
    incident_id: str = Field(foreign_key="incidents.id", index=True)
    at: datetime = utc_field()
    state: str
    kind: str
    message: str
    data: dict[str, Any] = json_field()


class DiagnosisRow(SQLModel, table=True):
    __tablename__: ClassVar[str] = "diagnoses"

    id: int | None = Field(default=None, primary_key=True)
    incident_id: str = Field(foreign_key="incidents.id", index=True)
    created_at: datetime = utc_field()
    reasoner: str
    root_cause_service: str
    category: str
    confidence: float
    summary: str
    tokens: int = 0
    fallback_reason: str | None = None
    #: The whole diagnosis (hypotheses, evidence) as the agents serialise it.
    body: dict[str, Any] = json_field()


class SlackMessageRow(SQLModel, table=True):
    """Where a message about an incident lives in Slack, so that it can be updated in place."""

    __tablename__: ClassVar[str] = "slack_messages"
    __table_args__ = (
        UniqueConstraint("channel", "ts"),
        Index("ix_slack_messages_incident_id_kind", "incident_id", "kind"),
    )

    id: int | None = Field(default=None, primary_key=True)
    incident_id: str | None = Field(default=None, foreign_key="incidents.id")
    channel: str
    ts: str
    thread_ts: str | None = None
    kind: str
    #: What the message shows: a plan id, a transaction id.
    ref: str | None = Field(default=None, index=True)
    created_at: datetime = utc_field()
    updated_at: datetime = utc_field()
