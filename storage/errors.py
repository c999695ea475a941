"""The storage error tree.

Callers never see a SQLAlchemy or driver exception: `storage.db` translates them here
(`raise ... from e`), so the agents can decide what to do by type alone — retry an
`Unavailable`, report a `Conflict`, stop writing on a `StaleToken`.
"""

from __future__ import annotations


class StorageError(Exception):
    """Root of every error the storage layer raises on purpose."""


class NotFound(StorageError):
    """The row asked for does not exist."""


class Conflict(StorageError):
    """A write broke a uniqueness or foreign-key rule (the row exists already, or refers to a
    row that does not)."""


class Unavailable(StorageError):
    """The database cannot be reached, or stayed locked past the busy timeout: retrying later
    may succeed."""


class LockError(StorageError):
    """Root of the writer-lock errors."""


class LockNotHeld(LockError):
    """The caller does not hold the lease it tried to renew."""


class StaleToken(LockNotHeld):
    """A fencing token that is not the current holder's unexpired token. Whoever presents it
    has lost the lease (it expired, or someone else took it over) and must not write."""

    def __init__(self, scope: str, token: int, reason: str) -> None:
        super().__init__(f"stale fencing token {token} for {scope}: {reason}")
        self.scope = scope
        self.token = token
        self.reason = reason
