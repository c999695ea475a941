"""Alembic's environment, configured from code: `storage.migrations` hands over an open
connection in `config.attributes["connection"]`, so no alembic.ini or URL is read here."""

from __future__ import annotations

from alembic import context

import storage.tables
from storage.migrations.settings import configure_context

if context.is_offline_mode():  # pragma: no cover - offline SQL scripts are not offered
    raise RuntimeError("storage migrations run online only")

connection = context.config.attributes["connection"]
configure_context(connection, storage.tables.metadata)
with context.begin_transaction():
    context.run_migrations()
