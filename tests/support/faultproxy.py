"""Outages for end-to-end tests: the proxy and the switchable metrics source live in
`lab.outages` (the bench's `--chaos` uses them too); a database that another connection locks
is here.

`SqliteLock` holds `BEGIN EXCLUSIVE` on the bot's database from another connection: what a
database that stops taking writes looks like to the bot (every write waits for the busy
timeout, then fails with "database is locked").
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from lab.outages import Action, FaultProxy, Injection, Mode, SwitchableMetrics

__all__ = ["Action", "FaultProxy", "Injection", "Mode", "SqliteLock", "SwitchableMetrics"]


class SqliteLock:
    """Hold an exclusive lock on a SQLite file from another connection while `held`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    def hold(self, timeout_s: float = 30.0) -> None:
        conn = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        self._conn = conn

    def release(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            self._conn.close()
            self._conn = None
