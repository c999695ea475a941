"""Transactions, their write-ahead undo entries, and the writer locks that fence them.

Nothing an undo needs lives only in memory (DESIGN section 8): an undo entry is written before
the cluster write it covers, with the snapshot that restores the object.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.tables.base import json_field, utc_field


class TransactionRow(SQLModel, table=True):
    __tablename__: ClassVar[str] = "transactions"
    __table_args__ = (
        Index("ix_transactions_cluster_namespace_status", "cluster", "namespace", "status"),
    )

    id: str = Field(primary_key=True)
    #: None for a manual undo, which belongs to no incident.
    incident_id: str | None = Field(default=None, foreign_key="incidents.id", index=True)
    plan_id: str | None = Field(default=None, foreign_key="plans.id")
    cluster: str
    namespace: str
    status: str = Field(index=True)
    fencing_token: int | None = None
    mu0: float | None = None
    mu_before: float | None = None
    mu_after: float | None = None
    started_at: datetime = utc_field()
    deadline_at: datetime | None = utc_field(nullable=True)
    ended_at: datetime | None = utc_field(nullable=True)
    holder: str | None = None
    validation: dict[str, Any] | None = json_field(nullable=True)
    reason: str | None = None


class UndoEntryRow(SQLModel, table=True):
    __tablename__: ClassVar[str] = "undo_entries"
    __table_args__ = (
        UniqueConstraint("transaction_id", "seq"),
        Index(
            "ix_undo_entries_target",
            "target_kind",
            "target_namespace",
            "target_name",
        ),
    )

    id: str = Field(primary_key=True)
    transaction_id: str = Field(foreign_key="transactions.id")
    #: Stack position within the transaction, from 1; assigned by `UndoRepository.push`.
    seq: int = 0
    action: dict[str, Any] = json_field()
    target_api_version: str
    target_kind: str
    target_namespace: str | None = None
    target_name: str
    #: Whether the object existed before the write (if not, undo deletes it).
    existed: bool = True
    snapshot: dict[str, Any] | None = json_field(nullable=True)
    state: str = "pending"
    produced_resource_version: str | None = None
    #: The comparable form of what the write produced: drift is a difference from it.
    produced: dict[str, Any] | None = json_field(nullable=True)
    created_at: datetime = utc_field()
    applied_at: datetime | None = utc_field(nullable=True)
    restored_at: datetime | None = utc_field(nullable=True)
    #: What a drift-confirmed undo overwrote (someone else's change), kept for the audit.
    overwritten: dict[str, Any] | None = json_field(nullable=True)


class WriterLockRow(SQLModel, table=True):
    """One row per scope, kept after release so that the fencing token never goes back."""

    __tablename__: ClassVar[str] = "writer_locks"

    scope: str = Field(primary_key=True)
    holder: str
    token: int
    acquired_at: datetime = utc_field()
    renewed_at: datetime = utc_field()
    expires_at: datetime = utc_field()
