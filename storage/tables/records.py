"""Append-only records: the audit trail and the change journal, and the scheduler's job table.

The scheduler table is apscheduler's own layout (`SQLAlchemyJobStore`), declared here so that
migrations create it like every other table instead of the job store doing it on the side.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Column, Float, Index, LargeBinary, Table, Unicode
from sqlmodel import Field, SQLModel

from storage.tables.base import json_field, metadata, utc_field


class AuditRow(SQLModel, table=True):
    __tablename__: ClassVar[str] = "audit_records"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = utc_field(index=True)
    actor: str
    #: dry_run, snapshot, write, validate, commit, abort, restore, undo, approve, reject,
    #: refuse, lock, ...
    verb: str = Field(index=True)
    incident_id: str | None = Field(default=None, index=True)
    transaction_id: str | None = Field(default=None, index=True)
    scope: str | None = None
    detail: dict[str, Any] = json_field()


class InboxRow(SQLModel, table=True):
    """Alerts a follower replica received, waiting for the leader to ingest them: only the
    leader runs detection, so a webhook call that lands on a follower is recorded, not lost."""

    __tablename__: ClassVar[str] = "alert_inbox"

    id: int | None = Field(default=None, primary_key=True)
    cluster: str = Field(index=True)
    received_at: datetime = utc_field()
    alerts: list[dict[str, Any]] = json_field(list_default=True)


class UndoRequestRow(SQLModel, table=True):
    """An Undo click that reached the deployment of another cluster than the change's: that
    deployment cannot write there, so it records the request for the owning cluster's leader
    (one Slack app hands each click to any of its connections)."""

    __tablename__: ClassVar[str] = "undo_requests"

    id: int | None = Field(default=None, primary_key=True)
    cluster: str = Field(index=True)  # the cluster whose deployment must act
    transaction_id: str
    user: str
    channel: str | None = None
    view_id: str | None = None
    confirm_drift: bool = False
    requested_at: datetime = utc_field()
    via: str  # the cluster whose deployment received the click


class JournalEntryRow(SQLModel, table=True):
    """One observed change of a watched object (who changed what, and when)."""

    __tablename__: ClassVar[str] = "change_journal"
    __table_args__ = (
        Index("ix_change_journal_scope_at", "cluster", "namespace", "at"),
        Index("ix_change_journal_object_at", "cluster", "namespace", "kind", "name", "at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    cluster: str
    namespace: str
    kind: str
    name: str
    at: datetime = utc_field()
    manager: str | None = None
    change_type: str  # ADDED | MODIFIED | DELETED
    resource_version: str | None = None
    #: field path → [old, new]
    diff: dict[str, Any] = json_field()
    #: The object's spec/data as of this change: the last-known-good source.
    object: dict[str, Any] | None = json_field(nullable=True)


SCHEDULER_JOBS_TABLE = "apscheduler_jobs"

scheduler_jobs = Table(
    SCHEDULER_JOBS_TABLE,
    metadata,
    Column("id", Unicode(191), primary_key=True),
    Column("next_run_time", Float(25), index=True),
    Column("job_state", LargeBinary, nullable=False),
)
