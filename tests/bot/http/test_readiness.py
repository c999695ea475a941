"""Readiness checks on values: Slack's `auth.test` (against the local workspace) is cached
and reports why it fails; a database write is proved without leaving anything behind."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from slack_sdk import WebClient

from bot.http.readiness import SlackAuth, database_write
from lab.slack import SlackWorkspace, WorkspaceConfig
from storage import Database
from storage.migrations import upgrade


@pytest.fixture
def workspace() -> Iterator[SlackWorkspace]:
    ws = SlackWorkspace(WorkspaceConfig())
    ws.start()
    try:
        yield ws
    finally:
        ws.stop()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_slack_auth_is_cached_and_says_why_it_fails(workspace: SlackWorkspace) -> None:
    client = WebClient(base_url=workspace.api_url, token="xoxb-revoked")
    clock = Clock()
    check = SlackAuth(client, ttl_s=30, now=clock)
    assert check() == "slack auth.test failed: invalid_auth"
    client.token = workspace.config.bot_token
    clock.now = 29
    assert check() == "slack auth.test failed: invalid_auth"  # remembered
    clock.now = 30
    assert check() == ""


def test_a_transient_slack_failure_is_remembered_only_briefly(workspace: SlackWorkspace) -> None:
    client = WebClient(base_url=workspace.api_url, token=workspace.config.bot_token)
    clock = Clock()
    check = SlackAuth(client, ttl_s=30, retry_s=5, now=clock)
    workspace.inject_rate_limit("auth.test", count=1)  # a 429 (no retry handler here)
    assert check() == "slack auth.test failed: ratelimited"
    clock.now = 4
    assert check() == "slack auth.test failed: ratelimited"  # not probed harder than 5 s
    clock.now = 5
    assert check() == ""  # the blip is over: ready again, not after 30 s
    clock.now = 34
    assert check() == ""  # a success is remembered for the TTL
    assert len(workspace.calls("auth.test")) == 2


def test_slack_unreachable() -> None:
    client = WebClient(base_url="http://127.0.0.1:9/api/", token="xoxb-1", timeout=2)
    assert SlackAuth(client)().startswith("slack unreachable")


def test_a_database_write_is_checked_and_leaves_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'stratus.db'}"
    upgrade(url)
    db = Database.connect(url, sqlite_busy_timeout_s=0.2)
    try:
        assert database_write(db) == ""
        assert database_write(db) == ""  # the scratch table was rolled back
        other = sqlite3.connect(tmp_path / "stratus.db", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # someone else holds the write lock
            assert other.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
            reason = database_write(db)
            assert reason.startswith("database write failed") and "locked" in reason
            other.execute("ROLLBACK")
        finally:
            other.close()
        assert database_write(db) == ""
        with sqlite3.connect(tmp_path / "stratus.db") as check:
            tables = {r[0] for r in check.execute("SELECT name FROM sqlite_master")}
        assert "stratus_write_probe" not in tables
    finally:
        db.close()
