"""Migrations: from empty to head, the migrated schema equals the models, down to base and
back, one-line errors, and the `stratus db` commands on both databases."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from sqlalchemy import inspect, text

import storage.tables
from bot.cli.main import cli
from storage.db import make_engine
from storage.migrations import SCRIPT_LOCATION, MigrationError, current, downgrade, head, upgrade
from storage.migrations.settings import context_options

TABLES = {
    "incidents",
    "incident_alerts",
    "timeline_events",
    "diagnoses",
    "plans",
    "approvals",
    "transactions",
    "undo_entries",
    "audit_records",
    "writer_locks",
    "change_journal",
    "slack_messages",
    "apscheduler_jobs",
    "alert_inbox",
    "undo_requests",
}


def schema_diff(url: str) -> list[object]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts=context_options(conn))
            return list(compare_metadata(context, storage.tables.metadata))
    finally:
        engine.dispose()


def tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_from_empty_matches_the_models(empty_url: str) -> None:
    assert current(empty_url) is None
    upgrade(empty_url)
    assert current(empty_url) == head() == "0004"
    assert tables(empty_url) == TABLES | {"alembic_version"}
    assert schema_diff(empty_url) == []


def test_schema_comparison_sees_a_missing_index(database_url: str) -> None:
    # The equality above means something only if the comparison can fail.
    engine = make_engine(database_url).execution_options(stratus_write=True)
    try:
        with engine.begin() as conn:
            conn.execute(text("DROP INDEX ix_incidents_group_key"))
    finally:
        engine.dispose()
    diff = schema_diff(database_url)
    assert [d[0] for d in diff if isinstance(d, tuple)] == ["add_index"]


def test_downgrade_to_base_and_back(database_url: str) -> None:
    downgrade(database_url, "base")
    assert current(database_url) is None
    assert tables(database_url) <= {"alembic_version"}
    upgrade(database_url)
    assert current(database_url) == head()
    assert schema_diff(database_url) == []


def test_upgrade_twice_is_a_no_op(database_url: str) -> None:
    upgrade(database_url)
    assert current(database_url) == head()


def test_current_of_a_missing_sqlite_file_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    assert current(f"sqlite:///{path}") is None
    assert not path.exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("nonsense://x", "unsupported database 'nonsense'"),
        ("mysql://u@127.0.0.1/db", "unsupported database 'mysql'"),
        ("postgresql+asyncpg://u@127.0.0.1/db", "unsupported PostgreSQL driver 'asyncpg'"),
        ("postgresql://u:secret@127.0.0.1:1/db", "cannot reach the database at"),
        ("sqlite:////nonexistent-dir/x/stratus.db", "cannot reach the database at"),
    ],
)
def test_errors_are_one_line(url: str, message: str) -> None:
    with pytest.raises(MigrationError) as info:
        upgrade(url)
    text_ = str(info.value)
    assert message in text_
    assert "\n" not in text_
    assert "secret" not in text_


def test_unknown_revision_is_a_migration_error(sqlite_url: str) -> None:
    with pytest.raises(MigrationError, match="migration failed"):
        upgrade(sqlite_url, "9999")


def test_cli_db_commands(empty_url: str) -> None:
    runner = CliRunner()
    env = {"STRATUS_DATABASE_URL": empty_url}

    result = runner.invoke(cli, ["db", "current"], env=env)
    assert result.exit_code == 0, result.output
    assert "empty" in result.output

    result = runner.invoke(cli, ["db", "upgrade"], env=env)
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["db", "current"], env=env)
    assert result.output.strip() == head()

    result = runner.invoke(cli, ["db", "downgrade", "base"], env=env)
    assert result.exit_code == 0, result.output
    assert current(empty_url) is None


def test_cli_reports_an_unreachable_database_in_one_line() -> None:
    runner = CliRunner()
    env = {"STRATUS_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    result = runner.invoke(cli, ["db", "upgrade"], env=env)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stratus: cannot reach the database")


def test_stratus_db_upgrade_with_a_nonsense_url_exits_2() -> None:
    # The installed console script, as a user runs it.
    stratus = Path(sys.executable).with_name("stratus")
    result = subprocess.run(
        [str(stratus), "db", "upgrade"],
        env={"STRATUS_DATABASE_URL": "nonsense://x", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "STRATUS_DATABASE_URL" in lines[0]
    assert "Traceback" not in result.stderr


def test_migration_scripts_are_package_files() -> None:
    # A non-editable install ships `*.py` of packages and `*.mako` as package data: the
    # versions folder must be a package for its scripts to be included.
    assert (SCRIPT_LOCATION / "versions" / "__init__.py").is_file()
    assert (SCRIPT_LOCATION / "script.py.mako").is_file()
    assert (SCRIPT_LOCATION / "env.py").is_file()


def upgrade_when_released(url: str, barrier: Any) -> None:
    barrier.wait(timeout=60)
    upgrade(url)


def test_concurrent_upgrades_migrate_once(empty_url: str) -> None:
    # Replicas starting at once all call upgrade(): none may fail, one migrates.
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3)
    processes = [
        ctx.Process(target=upgrade_when_released, args=(empty_url, barrier)) for _ in range(3)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=90)
    assert [p.exitcode for p in processes] == [0, 0, 0]
    assert current(empty_url) == head()
    assert schema_diff(empty_url) == []


def test_threads_of_one_process_migrate_one_at_a_time(empty_url: str) -> None:
    errors: list[BaseException] = []

    def start() -> None:
        try:
            upgrade(empty_url)
        except MigrationError as e:  # pragma: no cover - the failure being tested for
            errors.append(e)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert errors == []
    assert current(empty_url) == head()


def test_the_inbox_keeps_alerts_per_cluster_until_removed(database_url: str) -> None:
    from datetime import UTC, datetime

    from storage import Store

    upgrade(database_url)
    store = Store.connect(database_url)
    try:
        at = datetime(2026, 12, 5, tzinfo=UTC)
        first = store.inbox.put("prod", [{"fingerprint": "a"}], at)
        store.inbox.put("staging", [{"fingerprint": "b"}], at)
        second = store.inbox.put("prod", [{"fingerprint": "c"}, {"fingerprint": "d"}], at)
        assert store.inbox.take("prod") == [
            (first, [{"fingerprint": "a"}]),
            (second, [{"fingerprint": "c"}, {"fingerprint": "d"}]),
        ]
        store.inbox.remove([first])
        assert [i for i, _ in store.inbox.take("prod")] == [second]
        assert store.inbox.count("staging") == 1
    finally:
        store.close()


def test_undo_requests_wait_per_cluster_until_removed(database_url: str) -> None:
    from storage import Store

    upgrade(database_url)
    store = Store.connect(database_url)
    try:
        common = {"user": "U1", "channel": "C1", "view_id": None, "via": "west"}
        first = store.undo_requests.put(
            cluster="east", transaction_id="tx-1", confirm_drift=False, **common
        )
        store.undo_requests.put(
            cluster="west", transaction_id="tx-2", confirm_drift=False, **common
        )
        second = store.undo_requests.put(
            cluster="east", transaction_id="tx-3", confirm_drift=True, **common
        )
        taken = store.undo_requests.take("east")
        assert [(r.id, r.transaction_id, r.confirm_drift) for r in taken] == [
            (first, "tx-1", False),
            (second, "tx-3", True),
        ]
        # Stamped and aged by the database's clock (the deployments' clocks may differ).
        assert taken[0].via == "west" and 0 <= taken[0].age_s < 60
        store.undo_requests.remove(first)
        assert [r.id for r in store.undo_requests.take("east")] == [second]
        assert [r.transaction_id for r in store.undo_requests.take("west")] == ["tx-2"]
    finally:
        store.close()
