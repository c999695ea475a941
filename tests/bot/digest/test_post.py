"""Posting digests to the local workspace, and their cron jobs in the database's job store."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from slack_sdk import WebClient

from bot.chart_process import ChartProcess, use_charts
from bot.digest import (
    DigestPoster,
    job_id,
    register_digests,
    run_digest_job,
    schedule_digests,
)
from bot.doctor import SLACK_BOT_SCOPES
from lab.slack import ChannelSpec, SlackWorkspace, WorkspaceConfig
from storage import Store, jobstore
from tests.bot.digest.conftest import END, HOTEL, SHOP


class StoppedClock:
    """The agents' `Clock` port at a fixed instant that a test moves by hand."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return self.at.timestamp()

    def sleep(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def workspace() -> Iterator[SlackWorkspace]:
    config = WorkspaceConfig(
        bot_scopes=tuple(SLACK_BOT_SCOPES),  # exactly the app manifest's
        channels=(
            ChannelSpec(name="team-sre", members=("*",)),
            ChannelSpec(name="leads", members=("*",)),
            ChannelSpec(name="outside", members=("*",), bot_member=False),
        ),
    )
    with SlackWorkspace(config) as ws:
        yield ws


@pytest.fixture
def clock() -> StoppedClock:
    return StoppedClock(END)


@pytest.fixture
def poster(workspace: SlackWorkspace, seeded: Store, clock: StoppedClock) -> DigestPoster:
    return DigestPoster(
        client=WebClient(base_url=workspace.api_url, token=workspace.config.bot_token),
        store=seeded,
        cluster="lab",
        namespaces=[HOTEL, SHOP],
        clock=clock,
    )


def test_the_digest_and_its_chart_are_posted_and_remembered(
    poster: DigestPoster, workspace: SlackWorkspace, seeded: Store
) -> None:
    posted = poster.post("#team-sre")
    channel = workspace.channel("team-sre")["id"]
    assert posted.channel == channel
    [message] = workspace.messages("team-sre")
    assert message["ts"] == posted.ts
    assert message["text"].startswith("Stratus digest: 4 incidents opened")
    [_parent, reply] = workspace.messages("team-sre", thread_ts=posted.ts)
    assert reply["files"][0]["id"] == posted.chart_file_id
    assert workspace.file_bytes(str(posted.chart_file_id)).startswith(b"\x89PNG")
    [record] = seeded.audit.query(verb="digest")
    assert record.scope == f"slack:{channel}"
    assert record.detail["ts"] == posted.ts and record.detail["scheduled"] is False
    assert posted.digest.end - posted.digest.start == timedelta(hours=24)


def test_a_scheduled_digest_covers_the_time_since_the_previous_one(
    poster: DigestPoster, clock: StoppedClock
) -> None:
    first = poster.post("team-sre", scheduled=True)
    assert first.digest.start == END - timedelta(hours=24)  # no previous one
    clock.sleep(6 * 3600)
    second = poster.post("team-sre", scheduled=True)
    assert second.digest.start == first.digest.end
    assert second.digest.end == END + timedelta(hours=6)
    assert second.chart_file_id is None  # nothing opened or resolved since: no chart
    clock.sleep(30 * 24 * 3600)
    third = poster.post("team-sre", scheduled=True)
    assert third.digest.end - third.digest.start == timedelta(days=7)  # at most a week


def test_an_unknown_channel(poster: DigestPoster) -> None:
    with pytest.raises(LookupError, match="no-such-channel"):
        poster.post("no-such-channel")


def _scheduler(store: Store) -> BackgroundScheduler:
    scheduler = BackgroundScheduler(jobstores={"default": jobstore(store.db)}, timezone=UTC)
    scheduler.start(paused=True)
    return scheduler


def _other_job() -> None:  # pragma: no cover - never runs: the scheduler stays paused
    raise AssertionError("not a digest")


def test_schedules_are_reconciled_across_restarts(seeded: Store, poster: DigestPoster) -> None:
    first = _scheduler(seeded)
    try:
        first.add_job(_other_job, "interval", hours=1, id="housekeeping-like")
        ids = schedule_digests(
            first, poster, [("team-sre", "0 9 * * 1-5"), ("#leads", "30 17 * * 5")]
        )
        assert ids == [job_id("leads"), job_id("team-sre")]
    finally:
        first.shutdown(wait=False)

    second = _scheduler(seeded)  # a restart with changed settings
    try:
        schedule_digests(second, poster, [("team-sre", "0 8 * * *")])
        schedule_digests(second, poster, [("team-sre", "0 8 * * *")])  # idempotent
        jobs = {job.id: job for job in second.get_jobs()}
        assert set(jobs) == {"housekeeping-like", job_id("team-sre")}
        job = jobs[job_id("team-sre")]
        assert job.args == ("team-sre",)
        assert str(job.trigger) == str(CronTrigger.from_crontab("0 8 * * *", timezone=UTC))
        assert job.coalesce and job.misfire_grace_time == 3600
    finally:
        second.shutdown(wait=False)


def test_an_invalid_cron_changes_nothing(seeded: Store, poster: DigestPoster) -> None:
    scheduler = _scheduler(seeded)
    try:
        schedule_digests(scheduler, poster, [("team-sre", "0 9 * * *")])
        with pytest.raises(ValueError):
            schedule_digests(scheduler, poster, [("leads", "0 25 * * *")])
        assert [j.id for j in scheduler.get_jobs()] == [job_id("team-sre")]
    finally:
        scheduler.shutdown(wait=False)


def test_a_stopped_scheduler_is_refused(seeded: Store, poster: DigestPoster) -> None:
    scheduler = BackgroundScheduler(jobstores={"default": jobstore(seeded.db)}, timezone=UTC)
    with pytest.raises(RuntimeError, match="start the scheduler"):
        schedule_digests(scheduler, poster, [("team-sre", "0 9 * * *")])


def test_the_job_posts_through_the_registered_poster_and_survives_failures(
    seeded: Store, poster: DigestPoster, workspace: SlackWorkspace, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler = _scheduler(seeded)
    try:
        schedule_digests(scheduler, poster, [("leads", "0 9 * * *")])
    finally:
        scheduler.shutdown(wait=False)
    run_digest_job("leads")
    [message] = workspace.messages("leads")
    assert "Stratus digest" in message["text"]
    assert seeded.audit.query(verb="digest")[0].detail["scheduled"] is True
    with caplog.at_level(logging.ERROR, logger="bot.digest.schedule"):
        run_digest_job("outside")  # the bot is not in the channel: Slack refuses
    assert "scheduled digest for #outside failed" in caplog.text
    assert workspace.messages("outside") == []


def test_the_running_bot_schedules_and_posts_its_configured_digests(tmp_path: Path) -> None:
    from tests.bot.commands.stand import make_stand

    with make_stand(
        tmp_path, settings={"STRATUS_DIGEST_SCHEDULES": "incidents=0 9 * * 1-5"}
    ) as bot:
        assert register_digests(bot.services) == [job_id("incidents")]
        [job] = [j for j in bot.services.scheduler.get_jobs() if j.id.startswith("digest:")]
        assert job.args == ("incidents",)
        run_digest_job("incidents")  # what the scheduler runs at 09:00
        [message] = bot.ws.messages("incidents")
        assert message["text"].startswith("Stratus digest: 0 incidents opened")


def test_a_chart_that_fails_leaves_the_digest_posted_without_it(
    poster: DigestPoster, workspace: SlackWorkspace, seeded: Store
) -> None:
    # A chart worker that exits at once: every chart fails, as a crashed matplotlib would.
    failing = ChartProcess(timeout_s=120.0, command=[sys.executable, "-c", "pass"])
    previous = use_charts(failing)
    try:
        posted = poster.post("#team-sre")
    finally:
        use_charts(previous)
        failing.close()
    assert posted.chart_file_id is None
    [message] = workspace.messages("team-sre")
    assert message["ts"] == posted.ts
    assert workspace.messages("team-sre", thread_ts=posted.ts) == [message]  # no chart reply
    [record] = seeded.audit.query(verb="digest")
    assert record.detail["chart"] is None
