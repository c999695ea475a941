"""Storage fixtures: every repository test runs on SQLite (a file per test) and on PostgreSQL
(a schema per test, chosen through `search_path` and dropped afterwards, so parallel runs and
reruns never see each other's rows)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from storage import Database, Store
from storage.db import make_engine
from storage.migrations import upgrade
from tests.conftest import require

T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """T0 plus `seconds`: tests state their instants explicitly."""
    return T0 + timedelta(seconds=seconds)


def postgres_base_url() -> str:
    url = os.environ.get("STRATUS_TEST_POSTGRES_URL", "")
    require(bool(url), "STRATUS_TEST_POSTGRES_URL is not set (PostgreSQL tests)")
    return url


class PostgresSchema:
    """A fresh schema on the test PostgreSQL; `url` selects it for every connection."""

    def __init__(self, base_url: str) -> None:
        self.name = f"stratus_test_{uuid.uuid4().hex[:16]}"
        self._admin = make_engine(base_url).execution_options(isolation_level="AUTOCOMMIT")
        try:
            with self._admin.connect() as conn:
                conn.execute(text(f'CREATE SCHEMA "{self.name}"'))
        except Exception:
            self._admin.dispose()
            raise
        self.url = (
            make_url(base_url)
            .update_query_dict({"options": f"-csearch_path={self.name}"})
            .render_as_string(hide_password=False)
        )

    def drop(self) -> None:
        try:
            with self._admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE'))
        finally:
            self._admin.dispose()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """An empty PostgreSQL schema's URL."""
    schema = PostgresSchema(postgres_base_url())
    try:
        yield schema.url
    finally:
        schema.drop()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'stratus.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest) -> str:
    """An empty database on each backend."""
    name = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    url: str = request.getfixturevalue(name)
    return url


@pytest.fixture
def database_url(empty_url: str) -> str:
    """A database migrated to head, on each backend."""
    upgrade(empty_url)
    return empty_url


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database.connect(database_url)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def store(db: Database) -> Store:
    return Store.over(db)
