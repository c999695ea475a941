"""The database handle: one engine, one session factory, and the translation of driver errors
into `storage.errors`.

URLs. `postgresql://` and `postgres://` URLs are pointed at the psycopg 3 driver (the one that
is installed; SQLAlchemy would otherwise look for psycopg2). A `sqlite:///file.db` URL opens a
file; `sqlite://` is an in-memory database for throwaway use.

SQLite. Every connection turns on WAL (readers never block the writer and vice versa), a busy
timeout (a writer waits for another instead of failing at once) and foreign keys (off by
default in SQLite). The sqlite3 driver's own transaction handling is switched off and
SQLAlchemy emits BEGIN itself: `BEGIN IMMEDIATE` for write transactions, so that a writer takes
the database's write lock before its first read. Without it two processes that read then write
(compare-and-set, the writer lock) could both read the old value, and one would then fail with
"database is locked" instead of waiting. Reads use a plain (deferred) BEGIN.

PostgreSQL. READ COMMITTED, as usual; repositories that must not lose a race use single
conditional UPDATEs (compare-and-set) or row locks (`SELECT ... FOR UPDATE`).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, create_engine, event, exc, func, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import StaticPool
from sqlmodel import Session

from storage.errors import Conflict, StorageError, Unavailable

logger = logging.getLogger(__name__)

#: How long a SQLite writer waits for another writer before giving up (`Unavailable`).
SQLITE_BUSY_TIMEOUT_S = 15.0

_WRITE_OPTION = "stratus_write"


class UnsupportedDatabase(StorageError):
    """The URL names a database Stratus does not support."""


def normalize_url(url: str | URL) -> URL:
    """Parse `url` and pick the driver Stratus ships with. Raises `UnsupportedDatabase`."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except exc.ArgumentError as e:
        raise UnsupportedDatabase(f"not a database URL: {url!r}") from e
    backend, _, driver = parsed.drivername.partition("+")
    if backend in ("postgresql", "postgres"):
        if driver not in ("", "psycopg"):
            raise UnsupportedDatabase(
                f"unsupported PostgreSQL driver {driver!r} (use postgresql:// or "
                "postgresql+psycopg://)"
            )
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        if driver not in ("", "pysqlite"):
            raise UnsupportedDatabase(f"unsupported SQLite driver {driver!r} (use sqlite:///)")
        return parsed.set(drivername="sqlite")
    raise UnsupportedDatabase(
        f"unsupported database {parsed.drivername!r} (use sqlite:///FILE or postgresql://...)"
    )


def redact(url: str | URL) -> str:
    """The URL for messages and logs, without its password."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except exc.ArgumentError:
        return "<unparseable URL>"
    return parsed.render_as_string(hide_password=True)


def _is_memory(url: URL) -> bool:
    return url.database in (None, "", ":memory:")


def _sqlite_on_connect(busy_timeout_s: float) -> Callable[[Any, Any], None]:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take BEGIN away from the driver (see the module docstring); PRAGMAs then run outside
        # any transaction, which journal_mode requires.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            _enable_wal(cursor, busy_timeout_s)
            cursor.execute("PRAGMA foreign_keys=ON")
            # synchronous stays at its default, FULL: a committed undo entry survives a power
            # loss.
        finally:
            cursor.close()

    return on_connect


def _enable_wal(cursor: Any, busy_timeout_s: float) -> None:
    """Switch the file to WAL (persistent, so a no-op once done). Turning a new file to WAL
    needs an exclusive lock, and SQLite does not call the busy handler for it: when several
    processes open a fresh database at once, all but one get "database is locked". Retry
    within the busy timeout instead."""
    deadline = time.monotonic() + busy_timeout_s
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _sqlite_on_begin(conn: Any) -> None:
    write = conn.get_execution_options().get(_WRITE_OPTION, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(
    url: str | URL, *, echo: bool = False, sqlite_busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_S
) -> Engine:
    """An engine for `url` with Stratus's driver choice and SQLite settings."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        kwargs: dict[str, Any] = {"connect_args": {"timeout": sqlite_busy_timeout_s}}
        if _is_memory(parsed):
            # One shared connection, or every checkout would see its own empty database.
            kwargs["poolclass"] = StaticPool
            kwargs["connect_args"]["check_same_thread"] = False
        engine = create_engine(parsed, echo=echo, **kwargs)
        event.listen(engine, "connect", _sqlite_on_connect(sqlite_busy_timeout_s))
        event.listen(engine, "begin", _sqlite_on_begin)
        return engine
    return create_engine(parsed, echo=echo, pool_pre_ping=True)


def translate(error: exc.SQLAlchemyError) -> StorageError:
    """Map a SQLAlchemy error to the storage tree (the caller raises it `from` the original)."""
    first_line = str(getattr(error, "orig", None) or error).strip().splitlines()
    detail = first_line[0] if first_line else type(error).__name__
    if isinstance(error, exc.IntegrityError):
        return Conflict(detail)
    if isinstance(error, exc.OperationalError | exc.InterfaceError | exc.TimeoutError):
        return Unavailable(detail)
    return StorageError(detail)


def database_now(session: Session, dialect: str) -> datetime:
    """What time it is by the database: PostgreSQL's `clock_timestamp()`, one clock for every
    replica and every cluster's deployment whatever their own clocks say; on SQLite — one
    file on one host — that host's UTC clock."""
    if dialect == "postgresql":
        now: datetime = session.execute(select(func.clock_timestamp())).scalar_one()
        return now.astimezone(UTC)
    return datetime.now(UTC)


class Database:
    """An engine and its sessions. Create one per process (`Database.connect(url)`), share it
    between threads, `close()` it at exit."""

    def __init__(
        self, engine: Engine, *, sqlite_busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_S
    ) -> None:
        self._engine = engine
        self._write_engine = engine.execution_options(**{_WRITE_OPTION: True})
        self._busy_timeout_ms = int(sqlite_busy_timeout_s * 1000)
        self._closed = False
        event.listen(engine, "checkin", self._on_checkin)

    @classmethod
    def connect(
        cls,
        url: str | URL,
        *,
        echo: bool = False,
        sqlite_busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_S,
    ) -> Database:
        """Open a database (lazily: the first query connects). Raises `UnsupportedDatabase`."""
        return cls(
            make_engine(url, echo=echo, sqlite_busy_timeout_s=sqlite_busy_timeout_s),
            sqlite_busy_timeout_s=sqlite_busy_timeout_s,
        )

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def write_engine(self) -> Engine:
        """The engine whose transactions are write transactions (BEGIN IMMEDIATE on SQLite),
        for code that manages its own connections (the scheduler's job store)."""
        return self._write_engine

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`."""
        return self._engine.dialect.name

    @property
    def url(self) -> str:
        return redact(self._engine.url)

    def close(self) -> None:
        """Release every connection. Work still running on another thread at shutdown (a
        scheduler job, a watch) gets `Unavailable` from now on instead of a new connection,
        and a connection it holds is closed when handed back: a disposed engine would
        otherwise open a fresh pool that nobody closes."""
        self._closed = True
        self._engine.dispose()

    def _on_checkin(self, dbapi_connection: Any, _record: Any) -> None:
        if self._closed and dbapi_connection is not None:
            dbapi_connection.close()

    def _check_open(self) -> None:
        if self._closed:
            raise Unavailable("the database connection is closed (shutting down)")

    def check_write(self, *, timeout_s: float = 3.0) -> None:
        """Prove that a write can be made now (readiness): a scratch table created and a row
        inserted in a write transaction that is then rolled back, so nothing persists and no
        migration is needed. Waits at most `timeout_s` for a lock held elsewhere. Raises
        `StorageError` (`Unavailable` when locked, read-only or unreachable)."""
        self._check_open()
        try:
            with self._write_engine.connect() as conn:
                raw = conn.connection.driver_connection if self.dialect == "sqlite" else None
                if raw is not None:  # BEGIN IMMEDIATE waits for the lock this long, not 15 s
                    raw.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
                try:
                    transaction = conn.begin()
                    try:
                        if raw is None:
                            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{int(timeout_s)}s'")
                        conn.exec_driver_sql("CREATE TABLE stratus_write_probe (at INTEGER)")
                        conn.exec_driver_sql("INSERT INTO stratus_write_probe (at) VALUES (1)")
                    finally:
                        transaction.rollback()
                finally:
                    if raw is not None:
                        raw.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
        except exc.SQLAlchemyError as e:
            raise translate(e) from e

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One write transaction: committed when the block ends, rolled back if it raises."""
        with self._session(self._write_engine) as session:
            yield session

    @contextmanager
    def read(self) -> Iterator[Session]:
        """One read-only transaction (a consistent view on SQLite; READ COMMITTED on
        PostgreSQL)."""
        with self._session(self._engine) as session:
            yield session

    @contextmanager
    def _session(self, bind: Engine) -> Iterator[Session]:
        self._check_open()
        # expire_on_commit=False: rows handed back stay readable after the session closes.
        session = Session(bind=bind, expire_on_commit=False, autoflush=False)
        try:
            with session.begin():
                yield session
        except exc.SQLAlchemyError as e:
            raise translate(e) from e
        finally:
            session.close()
