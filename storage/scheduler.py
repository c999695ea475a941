"""The scheduler's job store, so that the bot persists its digest jobs without importing
SQLAlchemy itself. The table is created by the migrations like every other one."""

from __future__ import annotations

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore

from storage.db import Database
from storage.tables import SCHEDULER_JOBS_TABLE


class _JobStore(SQLAlchemyJobStore):  # type: ignore[misc]  # apscheduler has no types
    #: The `Database` opened for a URL, closed with the store; a given one is its owner's.
    owned: Database | None = None

    def shutdown(self) -> None:
        """Leave a given engine alone: it is the `Database`'s, closed with it. apscheduler's own
        shutdown disposes it, which orphans the pool while a job still running (the
        scheduler shuts down without waiting) holds one of its connections; handed back to
        the orphaned pool, that connection is never closed and is garbage-collected open —
        a ResourceWarning in whatever runs next."""
        if self.owned is not None:
            self.owned.close()


def jobstore(database: Database | str) -> SQLAlchemyJobStore:
    """An apscheduler 3 `SQLAlchemyJobStore` on the Stratus database (a `Database`, or a URL
    for which one is opened). Its write transactions take SQLite's write lock up front, like
    every other writer's."""
    db = database if isinstance(database, Database) else Database.connect(database)
    store = _JobStore(engine=db.write_engine, tablename=SCHEDULER_JOBS_TABLE)
    store.owned = None if db is database else db
    return store
