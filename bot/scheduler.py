"""The scheduler: apscheduler 3's `BackgroundScheduler` with two job stores.

* `default` is the Stratus database (`storage.jobstore`): jobs that must survive a restart
  (the digests). Such a job names a module-level function and has picklable arguments.
* `memory` holds the process's own periodic work — the scan and the detector's timers,
  recovery and approval expiry (housekeeping) — re-created at every start.

Every periodic job runs inside `guarded`, an outer boundary: a failure is logged with its
traceback and the job runs again at its next interval.

apscheduler's own loop has one hole: it guards reading the due jobs but not asking a job store
for its next run time, so a database that fails at that moment ends the scheduler's thread —
and with it the scan and housekeeping, silently, for the rest of the process. `_Scheduler`
closes it: a pass that raises is logged and tried again `STORE_RETRY_S` later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.background import BackgroundScheduler

from storage import Store, jobstore

logger = logging.getLogger(__name__)

MEMORY = "memory"

#: Seconds before the scheduler tries again after a pass failed on a job store (apscheduler
#: waits the same after a failed read of the due jobs).
STORE_RETRY_S = 10.0


class _Scheduler(BackgroundScheduler):  # type: ignore[misc]  # apscheduler is untyped
    def _process_jobs(self) -> float | None:
        try:
            wait: float | None = super()._process_jobs()
        except Exception:  # the scheduler thread's boundary: it must outlive a database blip
            logger.exception(
                "the scheduler could not read its job stores; trying again in %.0f s",
                STORE_RETRY_S,
            )
            return STORE_RETRY_S
        return wait


def build_scheduler(store: Store, *, workers: int = 4) -> BackgroundScheduler:
    return _Scheduler(
        jobstores={"default": jobstore(store.db), MEMORY: MemoryJobStore()},
        executors={"default": ThreadPoolExecutor(max_workers=workers)},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60},
        timezone=UTC,
    )


def guarded(name: str, job: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            job()
        except Exception:  # the scheduler job boundary: log, run again next time
            logger.exception("periodic job %s failed", name)

    return run


def every(
    scheduler: BackgroundScheduler, name: str, seconds: float, job: Callable[[], object]
) -> None:
    """Run `job` every `seconds` (in the memory store), the first time right away."""
    scheduler.add_job(
        guarded(name, job),
        trigger="interval",
        seconds=seconds,
        id=name,
        name=name,
        jobstore=MEMORY,
        replace_existing=True,
        next_run_time=datetime.now(UTC),
    )
