"""The writer lock: one lease per scope (cluster/namespace), with a fencing token.

TNR rule 1 (DESIGN section 3): at most one writer per scope at any time, across bot replicas.
A holder acquires a lease for `ttl_s` seconds and renews it while it works; if it stops
renewing (crash, partition, a long GC pause), the lease expires and another holder may take
it over. Every new acquisition gets a token one higher than any before it on that scope —
tokens never go back, because the row is kept on release — and the engine calls
`assert_current(scope, token)` before every cluster write, so a holder that lost its lease
without noticing is refused with `StaleToken` instead of writing next to its successor.

Clock. With `now=None` the database decides what time it is: PostgreSQL's `clock_timestamp()`
(one clock for every replica, whatever their own clocks say), and on SQLite — a single file on
one host — that host's UTC clock. Passing `now` makes every comparison use it instead (the lab
and tests drive the lock on their own time); do not mix the two on one scope.

Concurrency. Each operation is one write transaction. On PostgreSQL the lease row is locked
(`SELECT ... FOR UPDATE`) after an `INSERT ... ON CONFLICT DO NOTHING` that creates it the
first time, so two first acquisitions cannot both insert. On SQLite the transaction starts with
`BEGIN IMMEDIATE` (see `storage.db`), which serialises writers on the whole file.

A holder name identifies one acquirer (say `replica-2/txn-41`): `acquire` by the current holder
of an unexpired lease extends it and keeps its token.

Deadlines. A renewal that hangs is as bad as none: on PostgreSQL every lease operation runs with
`lock_timeout` and `statement_timeout` of `LEASE_STATEMENT_TIMEOUT_S` (a row lock held by a stuck
session, or a stalled server, becomes `Unavailable` instead of a wait without end); on SQLite
the busy timeout of `storage.db` bounds the wait for the file.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlmodel import Session, col, select

from storage.db import database_now
from storage.errors import StaleToken
from storage.repos.base import Repository, record_of
from storage.tables import WriterLockRow

logger = logging.getLogger(__name__)

#: The longest a lease statement may wait on PostgreSQL (row lock or execution), seconds.
LEASE_STATEMENT_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    scope: str
    holder: str
    token: int
    acquired_at: datetime
    renewed_at: datetime
    expires_at: datetime

    @classmethod
    def of(cls, row: WriterLockRow) -> Lease:
        return record_of(row, cls)


class WriterLocks(Repository):
    def acquire(
        self, scope: str, holder: str, ttl_s: float, *, now: datetime | None = None
    ) -> Lease | None:
        """Take the lease if it is free or expired (a new token), or extend it if `holder`
        already has it (same token). None while someone else holds it."""
        ttl = _ttl(ttl_s)
        with self._db.write() as s:
            self._deadline(s)
            self._ensure_row(s, scope, holder, now)
            row = self._locked(s, scope)
            assert row is not None  # _ensure_row made it
            t = self._now(s, now)
            if row.holder == holder and row.expires_at > t:
                row.renewed_at = t
                row.expires_at = t + ttl
            elif row.expires_at <= t:
                previous = (row.holder, row.token)
                row.holder = holder
                row.token += 1
                row.acquired_at = t
                row.renewed_at = t
                row.expires_at = t + ttl
                logger.info(
                    "writer lock %s: %s acquired token %d (after %s/%d)",
                    scope,
                    holder,
                    row.token,
                    *previous,
                )
            else:
                return None
            s.add(row)
            s.flush()
            return Lease.of(row)

    def renew(
        self, scope: str, holder: str, token: int, ttl_s: float, *, now: datetime | None = None
    ) -> Lease:
        """Extend a lease still held. Raises `StaleToken` when it expired or was taken over."""
        ttl = _ttl(ttl_s)
        with self._db.write() as s:
            self._deadline(s)
            row = self._locked(s, scope)
            t = self._now(s, now)
            _require_current(scope, token, row, t, holder=holder)
            assert row is not None
            row.renewed_at = t
            row.expires_at = t + ttl
            s.add(row)
            s.flush()
            return Lease.of(row)

    def release(
        self, scope: str, holder: str, token: int, *, now: datetime | None = None
    ) -> Lease | None:
        """Give the lease up: it expires now. Returns the released lease (its `expires_at` is
        the instant of release), or None, changing nothing, when it was no longer ours (it
        expired, or someone else holds it)."""
        with self._db.write() as s:
            self._deadline(s)
            row = self._locked(s, scope)
            t = self._now(s, now)
            if row is None or row.holder != holder or row.token != token or row.expires_at <= t:
                return None
            row.expires_at = t
            s.add(row)
            s.flush()
            logger.info("writer lock %s: %s released token %d", scope, holder, token)
            return Lease.of(row)

    def check(
        self,
        scope: str,
        token: int,
        *,
        now: datetime | None = None,
        min_remaining_s: float = 0.0,
    ) -> Lease:
        """The lease `token` stands for, if it is the current unexpired one with at least
        `min_remaining_s` left. Raises `StaleToken` otherwise."""
        with self._db.read() as s:
            self._deadline(s)
            row = s.get(WriterLockRow, scope)
            t = self._now(s, now) + timedelta(seconds=min_remaining_s)
            _require_current(scope, token, row, t)
            assert row is not None
            return Lease.of(row)

    def assert_current(
        self,
        scope: str,
        token: int,
        *,
        now: datetime | None = None,
        min_remaining_s: float = 0.0,
    ) -> None:
        """Call before every cluster write: raises `StaleToken` unless `token` still holds
        the scope."""
        self.check(scope, token, now=now, min_remaining_s=min_remaining_s)

    def current(self, scope: str, *, now: datetime | None = None) -> Lease | None:
        """The unexpired lease on `scope`, if any."""
        with self._db.read() as s:
            self._deadline(s)
            row = s.get(WriterLockRow, scope)
            if row is None or row.expires_at <= self._now(s, now):
                return None
            return Lease.of(row)

    def last(self, scope: str) -> Lease | None:
        """The lease on `scope` as it stands, expired or not (None if never granted): who held
        it last and when they last renewed it. Recovery quotes it when it takes over."""
        with self._db.read() as s:
            self._deadline(s)
            row = s.get(WriterLockRow, scope)
            if row is None or row.token == 0:
                return None
            return Lease.of(row)

    # ------------------------------------------------------------------------- internals

    def _deadline(self, s: Session) -> None:
        if self._db.dialect == "postgresql":
            ms = int(LEASE_STATEMENT_TIMEOUT_S * 1000)
            connection = s.connection()
            connection.exec_driver_sql(f"SET LOCAL lock_timeout = {ms}")
            connection.exec_driver_sql(f"SET LOCAL statement_timeout = {ms}")

    def _now(self, s: Session, now: datetime | None) -> datetime:
        if now is not None:
            if now.tzinfo is None or now.utcoffset() is None:
                raise ValueError(f"naive datetime {now.isoformat()} (use a timezone-aware one)")
            return now.astimezone(UTC)
        return database_now(s, self._db.dialect)

    def _ensure_row(self, s: Session, scope: str, holder: str, now: datetime | None) -> None:
        # A free, already expired row with token 0: the first acquisition then takes it like
        # any expired lease, and gets token 1.
        t = self._now(s, now)
        insert = self._insert(WriterLockRow).values(
            scope=scope, holder=holder, token=0, acquired_at=t, renewed_at=t, expires_at=t
        )
        s.exec(insert.on_conflict_do_nothing(index_elements=["scope"]))

    @staticmethod
    def _locked(s: Session, scope: str) -> WriterLockRow | None:
        return s.exec(
            select(WriterLockRow)
            .where(col(WriterLockRow.scope) == scope)
            .with_for_update()
            .execution_options(populate_existing=True)
        ).first()


def _ttl(ttl_s: float) -> timedelta:
    if ttl_s <= 0:
        raise ValueError(f"ttl_s must be positive, got {ttl_s}")
    return timedelta(seconds=ttl_s)


def _require_current(
    scope: str, token: int, row: WriterLockRow | None, t: datetime, *, holder: str | None = None
) -> None:
    if row is None:
        raise StaleToken(scope, token, "no lease was ever granted on this scope")
    if row.token != token:
        raise StaleToken(scope, token, f"superseded by token {row.token} ({row.holder})")
    if holder is not None and row.holder != holder:
        raise StaleToken(scope, token, f"held by {row.holder}, not {holder}")
    if row.expires_at <= t:
        raise StaleToken(scope, token, f"expired at {row.expires_at.isoformat()}")
