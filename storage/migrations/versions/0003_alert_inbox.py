"""The alert inbox: alerts a follower replica received, for the leader to ingest.

With leader election only the leader runs detection; a webhook call that lands on a follower
is recorded here instead of being lost or detected twice.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "alert_inbox",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "alerts", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name="pk_alert_inbox"),
    )
    op.create_index("ix_alert_inbox_cluster", "alert_inbox", ["cluster"])


def downgrade() -> None:
    op.drop_table("alert_inbox")
