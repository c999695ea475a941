"""The scheduler's job store, so that the bot persists its digest jobs without importing
SQLAlchemy itself. The table is created by the migrations like every other one."""

from __future__ import annotations

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore

from storage.db import Database
from storage.tables import SCHEDULER_JOBS_TABLE


def jobstore(database: Database | str) -> SQLAlchemyJobStore:
    """An apscheduler 3 `SQLAlchemyJobStore` on the Stratus database (a `Database`, or a URL
    for which one is opened). Its write transactions take SQLite's write lock up front, like
    every other writer's."""
    db = database if isinstance(database, Database) else Database.connect(database)
    return SQLAlchemyJobStore(engine=db.write_engine, tablename=SCHEDULER_JOBS_TABLE)
