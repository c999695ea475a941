"""Undo entries keep the comparable form of what the write produced.

Drift detection compares the live object with what our write produced, field by field:
resourceVersion alone cannot tell a controller's status update from someone else's edit.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("undo_entries") as batch:
        batch.add_column(
            sa.Column(
                "produced",
                sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("undo_entries") as batch:
        batch.drop_column("produced")
