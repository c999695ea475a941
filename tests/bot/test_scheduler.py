"""The scheduler's thread outlives a job store that fails (a database blip)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from apscheduler.jobstores.memory import MemoryJobStore

import bot.scheduler as scheduler_module
from bot.scheduler import MEMORY, _Scheduler, every


class _FlakyStore(MemoryJobStore):  # type: ignore[misc]  # apscheduler is untyped
    """Fails `get_next_run_time` (the call apscheduler's loop does not guard) a few times."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def get_next_run_time(self) -> datetime | None:
        if self.failures > 0:
            self.failures -= 1
            raise OSError("unable to open database file")
        return super().get_next_run_time()  # type: ignore[no-any-return]


def test_a_job_store_that_fails_does_not_end_the_scheduler(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(scheduler_module, "STORE_RETRY_S", 0.05)
    flaky = _FlakyStore(failures=3)
    scheduler = _Scheduler(jobstores={"default": flaky, MEMORY: MemoryJobStore()}, timezone=UTC)
    ran = threading.Semaphore(0)
    every(scheduler, "tick", 0.05, ran.release)
    scheduler.start()
    try:
        for _ in range(5):  # the job keeps running while, and after, the store fails
            assert ran.acquire(timeout=30)
        assert flaky.failures == 0
        assert scheduler._thread.is_alive()
    finally:
        scheduler.shutdown(wait=False)
    failures = [r for r in caplog.records if "could not read its job stores" in r.getMessage()]
    assert len(failures) == 3
