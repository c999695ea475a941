"""Scheduled digests: one apscheduler cron job per `(channel, cron)` of the settings.

The jobs live in the Stratus database (`storage.jobstore`), so a restart neither loses a
schedule nor doubles it: registration is a reconciliation — every configured schedule is
added or replaced under a stable id (`digest:<channel>`), and digest jobs no longer in the
settings are removed. A digest missed while the bot was down runs once when it comes back
(coalesced, within an hour's grace).

A persisted job names its function by reference and keeps only picklable arguments (the
channel), so the job function finds the live `DigestPoster` in this module's registry, set by
`schedule_digests`. The job is an outer boundary: it logs any failure with its traceback and
never lets an exception reach the scheduler's thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC
from typing import TYPE_CHECKING

from apscheduler.schedulers.base import STATE_STOPPED, BaseScheduler
from apscheduler.triggers.cron import CronTrigger

from bot.digest.post import DigestPoster

if TYPE_CHECKING:
    from bot.services import Services

logger = logging.getLogger(__name__)

JOB_PREFIX = "digest:"
MISFIRE_GRACE_S = 3600


def _always() -> bool:
    return True


class _Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._poster: DigestPoster | None = None
        self._gate: Callable[[], bool] = _always

    def set(self, poster: DigestPoster | None, gate: Callable[[], bool] = _always) -> None:
        with self._lock:
            self._poster = poster
            self._gate = gate

    def get(self) -> DigestPoster | None:
        with self._lock:
            return self._poster

    def gate(self) -> Callable[[], bool]:
        with self._lock:
            return self._gate


_REGISTRY = _Registry()


def job_id(channel: str) -> str:
    return f"{JOB_PREFIX}{channel.lstrip('#')}"


def run_digest_job(channel: str) -> None:
    """The scheduled job (referenced by name in the job store)."""
    poster = _REGISTRY.get()
    if poster is None:
        logger.error("digest for #%s is due but no DigestPoster is registered", channel)
        return
    if not _REGISTRY.gate()():
        logger.info("digest for #%s skipped: this replica no longer surely leads", channel)
        return
    try:
        poster.post(channel, scheduled=True)
    except Exception:  # the scheduler job boundary: log with the traceback, keep the scheduler
        logger.exception("scheduled digest for #%s failed", channel)


def schedule_digests(
    scheduler: BaseScheduler,
    poster: DigestPoster,
    schedules: Sequence[tuple[str, str]],
    *,
    jobstore: str = "default",
    gate: Callable[[], bool] = _always,
) -> list[str]:
    """Make the digest jobs in `jobstore` exactly `schedules` ((channel, 5-field cron in UTC)
    pairs, as `Settings.digest_schedules` holds them); returns the job ids. The scheduler must
    be started (`start(paused=True)` first if nothing should run before this): only a started
    scheduler sees the jobs persisted by an earlier run, which this removes when they are no
    longer configured. Raises `ValueError` for an invalid cron expression (before any change).
    `gate` is asked before each run (the leader's fence: a replica that may have lost the lease
    posts nothing)."""
    if scheduler.state == STATE_STOPPED:
        raise RuntimeError(
            "start the scheduler before scheduling digests (start(paused=True), then resume())"
        )
    triggers = {
        job_id(c): (c.lstrip("#"), CronTrigger.from_crontab(cron, timezone=UTC))
        for c, cron in schedules
    }
    _REGISTRY.set(poster, gate)
    for job in scheduler.get_jobs(jobstore=jobstore):
        if job.id.startswith(JOB_PREFIX) and job.id not in triggers:
            logger.info("digest job %s is no longer configured; removing it", job.id)
            scheduler.remove_job(job.id, jobstore=jobstore)
    for identifier, (channel, trigger) in triggers.items():
        scheduler.add_job(
            run_digest_job,
            trigger=trigger,
            args=[channel],
            id=identifier,
            name=f"digest for #{channel}",
            jobstore=jobstore,
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=MISFIRE_GRACE_S,
        )
    logger.info("digests scheduled: %s", ", ".join(sorted(triggers)) or "none")
    return sorted(triggers)


def register_digests(services: Services, gate: Callable[[], bool] = _always) -> list[str]:
    """Schedule `STRATUS_DIGEST_SCHEDULES` on the services' scheduler (call it in
    `Services.start`, between `scheduler.start(paused=True)` and `scheduler.resume()`)."""
    brain = services.brain
    poster = DigestPoster(
        client=services.slack.client,
        store=brain.store,
        cluster=brain.journal.cluster,
        namespaces=brain.namespaces,
        clock=services.clock,
    )
    return schedule_digests(
        services.scheduler, poster, services.settings.digest_schedules, gate=gate
    )
