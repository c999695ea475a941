"""SQLModel tables, repositories and migrations: the only package with SQL.

    db = Database.connect("sqlite:///stratus.db")   # or postgresql://...
    storage.migrations.upgrade(url)                   # schema at head
    store = Store.over(db)                            # every repository + the writer lock
    store.incidents.transition(iid, "diagnosing", at=now, message=..., expected="detected")

Timestamps are timezone-aware UTC in and out; states are the string values of the agents'
enums. Repositories take and return plain records (`storage.records`); the SQLModel rows of
`storage.tables` never leave the package (an import contract keeps it so).
"""

from storage.db import Database, UnsupportedDatabase, normalize_url
from storage.errors import (
    Conflict,
    LockError,
    LockNotHeld,
    NotFound,
    StaleToken,
    StorageError,
    Unavailable,
)
from storage.locks import Lease, WriterLocks
from storage.scheduler import jobstore
from storage.store import Store

__all__ = [
    "Conflict",
    "Database",
    "Lease",
    "LockError",
    "LockNotHeld",
    "NotFound",
    "StaleToken",
    "StorageError",
    "Store",
    "Unavailable",
    "UnsupportedDatabase",
    "WriterLocks",
    "jobstore",
    "normalize_url",
]
