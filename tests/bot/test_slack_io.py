"""`SlackIO` against the local workspace with the real `WebClient`: a 429 with Retry-After
loses no message, posting is paced per channel, long content goes out as a file, and a call
that still fails raises `SlackCallFailed` with Slack's error (counted in the metrics)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from bot.errors import SlackCallFailed, SlotBusy
from bot.metrics import BotMetrics
from bot.render.blocks import Attachment, Message, section
from bot.slack_io import FILE_TRIES, RATE_LIMIT_RETRIES, Pacer, SlackIO, web_client
from bot.workers import Lanes, Origin
from lab.slack import SlackWorkspace
from tests.bot.fake_timers import FakeTimers


@pytest.fixture
def workspace() -> Iterator[SlackWorkspace]:
    with SlackWorkspace() as ws:
        yield ws


def slack_io(ws: SlackWorkspace, metrics: BotMetrics, interval: float = 0.0) -> SlackIO:
    client = web_client(token=ws.config.bot_token, base_url=ws.api_url, metrics=metrics)
    return SlackIO(client, metrics=metrics, post_interval_s=interval, update_interval_s=interval)


def note(text: str) -> Message:
    return Message(text=text, blocks=(section(text),))


def test_a_rate_limited_post_is_retried_after_retry_after(workspace: SlackWorkspace) -> None:
    metrics = BotMetrics()
    io = slack_io(workspace, metrics)
    workspace.inject_rate_limit("chat.postMessage", count=2, retry_after=1)
    started = time.monotonic()
    posted = io.post("incidents", note("first"))
    assert time.monotonic() - started >= 2.0  # waited Retry-After twice
    statuses = [c.status for c in workspace.calls("chat.postMessage")]
    assert statuses == [429, 429, 200]
    message = workspace.message("incidents", posted.ts)
    assert message is not None and message["text"] == "first"
    counted = metrics.slack_api_errors.labels(method="chat.postMessage", error="ratelimited")
    assert counted._value.get() == 2


def test_posts_to_one_channel_are_paced(workspace: SlackWorkspace) -> None:
    io = slack_io(workspace, BotMetrics(), interval=0.3)
    started = time.monotonic()
    for n in range(4):
        io.post("incidents", note(f"message {n}"))
    assert time.monotonic() - started >= 0.9  # three waits of 0.3 s between four posts
    texts = [m["text"] for m in workspace.messages("incidents")]
    assert texts == [f"message {n}" for n in range(4)]


def test_pacer_gives_each_key_its_own_slots() -> None:
    now = [0.0]
    slept: list[float] = []
    pacer = Pacer(1.0, clock=lambda: now[0], sleep=slept.append)
    pacer.wait("a")
    pacer.wait("b")
    pacer.wait("a")
    pacer.wait("a")
    assert slept == [1.0, 2.0]


def test_files_of_a_message_are_uploaded_next_to_it(workspace: SlackWorkspace) -> None:
    io = slack_io(workspace, BotMetrics())
    content = "line\n" * 5000
    message = Message(
        text="diff",
        blocks=(section("see the file"),),
        files=(Attachment(filename="plan-diff.txt", title="Dry-run diff", content=content),),
    )
    posted = io.post("incidents", message)
    [file] = workspace.files()
    assert file["name"] == "plan-diff.txt"
    assert workspace.file_bytes(file["id"]).decode() == content
    assert workspace.message("incidents", posted.ts) is not None


def _refuse_uploads(workspace: SlackWorkspace, posts: int) -> None:
    """Make the next `posts` uploads fail for good: each one is refused more times than the
    client retries a 429 (Retry-After 0, so the test does not wait)."""
    workspace.inject_rate_limit(
        "files.getUploadURLExternal", count=posts * (RATE_LIMIT_RETRIES + 1), retry_after=0
    )


def test_a_failed_file_leaves_the_message_posted_once_and_is_retried_alone(
    workspace: SlackWorkspace,
) -> None:
    io = slack_io(workspace, BotMetrics())
    chart = Attachment(filename="signals.png", title="Affected signals", content=b"\x89PNG...")
    message = Message(text="diagnosis", blocks=(section("diagnosis"),), files=(chart,))
    _refuse_uploads(workspace, posts=1)
    posted = io.post("incidents", message)  # the message went out: no SlackCallFailed
    assert [m["text"] for m in workspace.messages("incidents")] == ["diagnosis"]
    assert workspace.files() == []
    assert io.retry_files() == 0  # uploaded on its own, the message not posted again
    [file] = workspace.files()
    assert file["name"] == "signals.png"
    texts = [m["text"] for m in workspace.messages("incidents") if not m.get("files")]
    assert texts == ["diagnosis"]  # the file is shared in its own message; ours is not repeated
    assert [c.args.get("text") for c in workspace.calls("chat.postMessage")] == ["diagnosis"]
    assert workspace.message("incidents", posted.ts) is not None


def test_a_file_that_keeps_failing_is_dropped_after_bounded_tries(
    workspace: SlackWorkspace, caplog: pytest.LogCaptureFixture
) -> None:
    io = slack_io(workspace, BotMetrics())
    chart = Attachment(filename="signals.png", title="Affected signals", content=b"png")
    _refuse_uploads(workspace, posts=FILE_TRIES)
    io.post("incidents", Message(text="plan", blocks=(section("plan"),), files=(chart,)))
    remaining = [io.retry_files() for _ in range(FILE_TRIES)]
    assert remaining == [1] * (FILE_TRIES - 2) + [0, 0]  # dropped at the last try
    assert workspace.files() == []
    assert [m["text"] for m in workspace.messages("incidents")] == ["plan"]
    assert "dropped after 3 tries" in caplog.text


def test_a_failed_call_raises_slack_call_failed_and_is_counted(workspace: SlackWorkspace) -> None:
    metrics = BotMetrics()
    io = slack_io(workspace, metrics)
    with pytest.raises(SlackCallFailed) as failed:
        io.post("no-such-channel", note("lost"))
    assert failed.value.error == "channel_not_found"
    counted = metrics.slack_api_errors.labels(method="chat.postMessage", error="channel_not_found")
    assert counted._value.get() == 1


def test_tell_falls_back_to_a_direct_message(workspace: SlackWorkspace) -> None:
    io = slack_io(workspace, BotMetrics())
    channel = io.create_channel("inc-20260105-geo-1234")  # carol is not a member
    io.tell("U0CAROL03", "you are not an approver", channel=channel)
    assert workspace.ephemerals(channel) == []
    dm = [
        c
        for c in workspace.calls("chat.postMessage")
        if c.args.get("text") == "you are not an approver"
    ]
    assert len(dm) == 1 and dm[0].ok


def test_try_take_never_sleeps_and_says_when_the_slot_is_free() -> None:
    timers = FakeTimers()
    pacer = Pacer(1.0, clock=timers.clock, sleep=lambda s: pytest.fail("slept"))
    assert pacer.try_take("a") == 0.0
    assert pacer.try_take("b") == 0.0  # each key its own slots
    timers.now = 0.25
    assert pacer.try_take("a") == 0.75  # not taken: asking again is free
    assert pacer.try_take("a") == 0.75
    timers.now = 1.0
    assert pacer.try_take("a") == 0.0


def test_a_post_that_may_not_wait_raises_slot_busy_and_posts_nothing(
    workspace: SlackWorkspace,
) -> None:
    timers = FakeTimers()
    client = web_client(token=workspace.config.bot_token, base_url=workspace.api_url)
    io = SlackIO(client, clock=timers.clock)
    io.post("incidents", note("first"), wait=False)
    with pytest.raises(SlotBusy) as busy:
        io.post("incidents", note("second"), wait=False)
    assert busy.value.delay_s == 1.0
    assert [m["text"] for m in workspace.messages("incidents")] == ["first"]
    timers.advance(1.0)
    io.post("incidents", note("second"), wait=False)
    assert [m["text"] for m in workspace.messages("incidents")] == ["first", "second"]


def test_files_of_a_post_that_may_not_wait_go_out_before_the_channels_next_post(
    workspace: SlackWorkspace,
) -> None:
    timers = FakeTimers()
    client = web_client(token=workspace.config.bot_token, base_url=workspace.api_url)
    io = SlackIO(client, clock=timers.clock)
    channel = io.create_channel("inc-files")  # an id, as posted messages report
    chart = Attachment(filename="signals.png", title="Affected signals", content=b"png")
    io.post(channel, Message(text="diagnosis", blocks=(), files=(chart,)), wait=False)
    assert workspace.files() == []  # the slot went to the message: the file waits
    with pytest.raises(SlotBusy):
        io.send_files(channel)
    timers.advance(1.0)
    with pytest.raises(SlotBusy):  # the file takes this slot; the plan waits for the next
        io.post(channel, note("plan"), wait=False)
    assert [f["name"] for f in workspace.files()] == ["signals.png"]
    timers.advance(1.0)
    io.post(channel, note("plan"), wait=False)
    io.send_files(channel)  # nothing left: returns
    texts = [m["text"] for m in workspace.messages(channel) if not m.get("files")]
    assert texts == ["diagnosis", "plan"]


def test_a_busy_channel_does_not_hold_up_another_on_a_single_worker(
    workspace: SlackWorkspace,
) -> None:
    """The issue's case: one Slack worker, channel A's slot busy. B's post goes out at once;
    A's waiting message goes out, in order with A's next, when A's slot comes; nothing
    slept."""
    timers = FakeTimers()
    client = web_client(token=workspace.config.bot_token, base_url=workspace.api_url)
    io = SlackIO(client, clock=timers.clock)
    io.posts = Pacer(1.0, clock=timers.clock, sleep=lambda s: pytest.fail("a lane slept"))
    lanes = Lanes(workers=1, name="test-slack", timer=timers)
    a = io.create_channel("inc-a")
    b = io.create_channel("inc-b")

    def post(channel: str, text: str) -> None:
        lanes.submit(channel, lambda: io.post(channel, note(text), wait=False), Origin(what=text))

    post(a, "a1")
    post(a, "a2")  # A's slot is busy: A's lane parks
    assert lanes.wait_settled(10) and lanes.parked() == 1
    post(b, "b1")
    assert lanes.wait_settled(10)
    assert [m["text"] for m in workspace.messages(b)] == ["b1"]
    assert [m["text"] for m in workspace.messages(a)] == ["a1"]
    post(a, "a3")
    while lanes.busy():
        timers.advance(1.0)
        assert lanes.wait_settled(10)
    assert [m["text"] for m in workspace.messages(a)] == ["a1", "a2", "a3"]
    lanes.close()
