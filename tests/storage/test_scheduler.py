"""The apscheduler job store on the Stratus database: jobs persist across scheduler
instances (a restart) in the migrated table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler

from storage import Database, jobstore


def digest(channel: str) -> None:  # pragma: no cover - never runs: the job is in the future
    raise AssertionError(channel)


def test_jobs_survive_a_restart(db: Database) -> None:
    when = datetime.now(UTC) + timedelta(days=1)
    first = BackgroundScheduler(jobstores={"default": jobstore(db)}, timezone=UTC)
    first.start(paused=True)
    try:
        first.add_job(digest, "date", run_date=when, args=["team-sre"], id="digest-team-sre")
    finally:
        first.shutdown(wait=False)

    second = BackgroundScheduler(jobstores={"default": jobstore(db)}, timezone=UTC)
    second.start(paused=True)
    try:
        (job,) = second.get_jobs()
        assert (job.id, job.args, job.next_run_time) == ("digest-team-sre", ("team-sre",), when)
    finally:
        second.shutdown(wait=False)


def test_shutting_the_scheduler_down_leaves_the_database_to_its_owner(db: Database) -> None:
    """apscheduler's job store disposes its engine at shutdown; on the shared `Database` that
    orphaned the pool of a job still running, whose connection was then garbage-collected
    open (the scheduler shuts down without waiting)."""
    pool = db.engine.pool
    scheduler = BackgroundScheduler(jobstores={"default": jobstore(db)}, timezone=UTC)
    scheduler.start(paused=True)
    scheduler.shutdown(wait=False)
    assert db.engine.pool is pool
    with db.read() as s:
        assert s.connection() is not None


def test_jobstore_from_a_url(database_url: str) -> None:
    store = jobstore(database_url)
    pool = store.engine.pool
    assert store.engine.url.get_backend_name() in ("sqlite", "postgresql")
    store.shutdown()  # the Database it opened is closed with it
    assert store.engine.pool is not pool
