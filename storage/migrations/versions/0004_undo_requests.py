"""Undo requests forwarded between clusters' deployments.

One Slack app serves the deployments of several clusters and hands each click to any of its
connections; an Undo click that reaches another cluster's deployment is recorded here for the
owning cluster's leader instead of being refused.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "undo_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("transaction_id", sa.String(), nullable=False),
        sa.Column("user", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=True),
        sa.Column("view_id", sa.String(), nullable=True),
        sa.Column("confirm_drift", sa.Boolean(), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("via", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_undo_requests"),
    )
    op.create_index("ix_undo_requests_cluster", "undo_requests", ["cluster"])


def downgrade() -> None:
    op.drop_table("undo_requests")
