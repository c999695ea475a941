"""Database: URL normalisation, SQLite settings, error translation, in-memory use."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from storage import Database, Store, Unavailable, UnsupportedDatabase, normalize_url
from storage.db import redact
from storage.migrations import MigrationError, upgrade
from storage.tables import metadata
from tests.storage import rows
from tests.storage.conftest import at


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("postgresql://u@h/db", "postgresql+psycopg"),
        ("postgres://u@h/db", "postgresql+psycopg"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg"),
        ("sqlite:///x.db", "sqlite"),
        ("sqlite+pysqlite:///x.db", "sqlite"),
    ],
)
def test_urls_get_the_shipped_driver(url: str, driver: str) -> None:
    assert normalize_url(url).drivername == driver


@pytest.mark.parametrize(
    "url", ["nonsense://x", "sqlite+aiosqlite:///x.db", "postgresql+psycopg2://h/db", "::"]
)
def test_unsupported_urls(url: str) -> None:
    with pytest.raises(UnsupportedDatabase):
        normalize_url(url)


def test_redact_hides_the_password() -> None:
    assert "hunter2" not in redact("postgresql://u:hunter2@h/db")
    assert redact("::") == "<unparseable URL>"


def test_sqlite_connections_use_wal_foreign_keys_and_a_busy_timeout(sqlite_url: str) -> None:
    db = Database.connect(sqlite_url)
    try:
        with db.engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
            assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 15000
        assert db.dialect == "sqlite"
        assert db.url.startswith("sqlite:///")
    finally:
        db.close()


def test_in_memory_sqlite_shares_one_database() -> None:
    db = Database.connect("sqlite://")
    try:
        metadata.create_all(db.engine)
        store = Store.over(db)
        store.incidents.create(rows.incident())
        store.incidents.add_event(rows.event(message="note", kind="note", at=at(1)))
        assert [e.kind for e in store.incidents.timeline("inc-1")] == ["note"]
        assert store.incidents.db is db
    finally:
        db.close()


def test_an_unreachable_database_is_unavailable() -> None:
    store = Store.connect("postgresql://nobody@127.0.0.1:1/none")
    try:
        with pytest.raises(Unavailable):
            store.incidents.list_open()
    finally:
        store.close()


def test_a_locked_sqlite_database_is_unavailable(sqlite_url: str) -> None:
    upgrade(sqlite_url)
    blocker = Database.connect(sqlite_url)
    impatient = Database.connect(sqlite_url, sqlite_busy_timeout_s=0)
    try:
        with blocker.write() as s:
            s.connection()  # BEGIN IMMEDIATE: `blocker` holds the write lock ...
            with pytest.raises(Unavailable, match="locked"):
                Store.over(impatient).incidents.create(rows.incident())
        # ... and once it is gone, the same write goes through.
        Store.over(impatient).incidents.create(rows.incident())
    finally:
        blocker.close()
        impatient.close()


def test_upgrade_over_foreign_tables_fails_in_one_line(sqlite_url: str) -> None:
    db = Database.connect(sqlite_url)
    try:
        with db.write() as s:
            s.connection().exec_driver_sql("CREATE TABLE incidents (id TEXT)")
    finally:
        db.close()
    with pytest.raises(MigrationError, match="migration failed on sqlite:///") as info:
        upgrade(sqlite_url)
    assert "\n" not in str(info.value)


def test_list_closed_by_cluster_and_undo_without_entries(store: Store) -> None:
    store.incidents.create(rows.incident("a", state="closed", closed_at=at(1)))
    store.incidents.create(rows.incident("b", state="closed", closed_at=at(2), cluster="prod"))
    assert [i.id for i in store.incidents.list_closed(cluster="prod")] == ["b"]
    store.transactions.create(rows.transaction(incident_id="a"))
    assert store.undo.later_transactions("txn-1") == []
