"""Plans and the approvals bound to them.

An approval is bound to the plan's `content_hash` at the time it was given: if the plan's
actions changed, the old approvals no longer count (DESIGN section 7).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.tables.base import json_field, utc_field


class PlanRow(SQLModel, table=True):
    __tablename__: ClassVar[str] = "plans"
    __table_args__ = (Index("ix_plans_incident_id_attempt_rank", "incident_id", "attempt", "rank"),)

    id: str = Field(primary_key=True)
    incident_id: str = Field(foreign_key="incidents.id")
    attempt: int = 0
    #: 0 is the planner's first choice; alternatives follow.
    rank: int = 0
    status: str = Field(index=True)
    risk: str
    content_hash: str
    actions: list[Any] = json_field(list_default=True)
    rationale: str = ""
    body: dict[str, Any] = json_field()
    created_at: datetime = utc_field()
    expires_at: datetime | None = utc_field(nullable=True)
    decided_by: str | None = None
    decided_at: datetime | None = utc_field(nullable=True)
    reject_reason: str | None = None


class ApprovalRow(SQLModel, table=True):
    __tablename__: ClassVar[str] = "approvals"
    __table_args__ = (UniqueConstraint("plan_id", "user_id"),)

    id: str = Field(primary_key=True)
    plan_id: str = Field(foreign_key="plans.id")
    content_hash: str
    user_id: str
    created_at: datetime = utc_field()
    expires_at: datetime = utc_field()
