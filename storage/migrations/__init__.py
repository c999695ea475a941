"""Schema migrations (Alembic), configured from code.

The scripts live in this package (`versions/`, shipped with it), so an installed Stratus
migrates its database without an alembic.ini: `stratus db upgrade`, or `upgrade(url)` at
start-up. Every failure is a `MigrationError` whose message is one line the CLI can print.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, exc, text
from sqlalchemy.engine import make_url

from storage.db import UnsupportedDatabase, make_engine, redact
from storage.errors import StorageError

logger = logging.getLogger(__name__)

SCRIPT_LOCATION = Path(__file__).resolve().parent

#: Alembic keeps its running context in module globals (`alembic.context`, `alembic.op`): two
#: threads of one process must not migrate at the same time.
_IN_PROCESS = threading.Lock()

#: PostgreSQL advisory lock that serialises migrations (an arbitrary constant: "stratus").
_ADVISORY_LOCK_KEY = int.from_bytes(b"stratus", "big")


class MigrationError(StorageError):
    """A migration could not run. `str(error)` is one line for the user."""


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _one_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__


@contextmanager
def _connection(url: str) -> Iterator[Connection]:
    """One connection in one transaction (BEGIN IMMEDIATE on SQLite): a migration is applied
    whole or not at all, and a second process migrating at the same time waits for the first,
    then finds the work done."""
    with _IN_PROCESS, _transaction(url) as connection:
        yield connection


@contextmanager
def _transaction(url: str) -> Iterator[Connection]:
    try:
        engine = make_engine(url).execution_options(stratus_write=True)
    except UnsupportedDatabase as e:
        raise MigrationError(str(e)) from e
    except (exc.ArgumentError, exc.NoSuchModuleError) as e:
        raise MigrationError(f"unsupported database URL {redact(url)}: {_one_line(e)}") from e
    try:
        try:
            connection = engine.connect()
        except exc.SQLAlchemyError as e:
            raise MigrationError(
                f"cannot reach the database at {redact(url)}: {_one_line(e)}"
            ) from e
        try:
            with connection, connection.begin():
                if connection.dialect.name == "postgresql":
                    # Replicas starting together: one migrates, the others wait, then find
                    # the schema at head. (SQLite gets the same from BEGIN IMMEDIATE.)
                    connection.execute(
                        text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK_KEY}
                    )
                yield connection
        except CommandError as e:
            raise MigrationError(f"migration failed: {_one_line(e)}") from e
        except exc.SQLAlchemyError as e:
            raise MigrationError(f"migration failed on {redact(url)}: {_one_line(e)}") from e
    finally:
        engine.dispose()


def head() -> str:
    """The newest revision this version of Stratus knows."""
    revision = ScriptDirectory.from_config(_config()).get_current_head()
    assert revision is not None
    return revision


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at `url` up to `revision`."""
    with _connection(url) as connection:
        command.upgrade(_config(connection), revision)
    logger.info("database %s upgraded to %s", redact(url), revision)


def downgrade(url: str, revision: str) -> None:
    """Revert the database at `url` down to `revision` (`base` drops every table)."""
    with _connection(url) as connection:
        command.downgrade(_config(connection), revision)
    logger.info("database %s downgraded to %s", redact(url), revision)


def current(url: str) -> str | None:
    """The database's revision, or None when no migration was ever applied."""
    if _missing_sqlite_file(url):
        # Do not create an empty file just to say that it is empty.
        return None
    with _connection(url) as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _missing_sqlite_file(url: str) -> bool:
    try:
        parsed = make_url(url)
    except exc.ArgumentError:
        return False
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return False
    return not Path(str(parsed.database)).exists()
