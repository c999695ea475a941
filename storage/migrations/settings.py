"""The options every migration run and every schema comparison share."""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import Connection, MetaData


def include_name(name: str | None, type_: str, _parent: Any) -> bool:
    # Only our own tables: the schema may be shared with other software.
    return not (type_ == "table" and name == "alembic_version")


def context_options(connection: Connection) -> dict[str, Any]:
    return {
        # SQLite cannot ALTER most things: later migrations use batch mode (copy and move).
        "render_as_batch": connection.dialect.name == "sqlite",
        "compare_type": True,
        "compare_server_default": True,
        "include_name": include_name,
    }


def configure_context(connection: Connection, metadata: MetaData) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        **context_options(connection),
    )
