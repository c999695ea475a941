"""Everything the bot says to Slack goes through here: the platform's limits in one place.

* **Pacing.** At most one post per second per channel and one update per second per message
  (`Pacer`). A caller on its own thread waits for its slot (`wait=True`, the default). A
  caller on the shared Slack lanes passes `wait=False`: a busy slot raises `SlotBusy` (a
  `RunLater`) before anything is sent, and the lane runs the task again when the slot is
  free, so no worker sleeps while other channels have messages to send. Files of a message
  posted that way are queued per channel and go out, in order, before the channel's next
  post or at `send_files`. The notifier coalesces progress updates before it asks, so the
  latest state is what goes out.
* **Retries.** The `WebClient` is built with slack_sdk's retry handlers: HTTP 429 is retried
  after `Retry-After` (`CountingRateLimitHandler` also counts it), connection errors a few
  times with back-off.
* **Limits.** Messages arrive from the renderers already within Block Kit's limits; content
  they set aside as files is uploaded with `files_upload_v2` next to the message.
* **Exactly once.** A message counts as posted once `chat.postMessage` answered: a file that
  then fails to upload does not fail the post (the caller would record nothing and post the
  message again). The file is queued and retried on its own by `retry_files` (the
  housekeeping job), and dropped with a WARNING after `FILE_TRIES` tries.
* **Errors.** A call that still fails raises `SlackCallFailed` (Slack's error code, counted
  by method and error). Callers never see `SlackApiError`; what they lost is re-rendered from
  storage on the next event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from urllib.error import URLError
from urllib.parse import urlparse

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web import SlackResponse

from agents.redact import redact_mapping, redact_text
from bot.errors import SlackCallFailed, SlotBusy
from bot.metrics import BotMetrics
from bot.render.blocks import Attachment, Block, Message, View

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Errors of an ephemeral message that a direct message avoids.
_NOT_THERE = frozenset({"user_not_in_channel", "not_in_channel", "channel_not_found"})

RATE_LIMIT_RETRIES = 5
CONNECTION_RETRIES = 3
REQUEST_TIMEOUT_S = 30
#: Tries of a file whose message was posted (the first included) before it is dropped.
FILE_TRIES = 3


class CountingRateLimitHandler(RateLimitErrorRetryHandler):
    """Retries 429s after Retry-After, and counts each one as an API error."""

    def __init__(self, metrics: BotMetrics | None, max_retry_count: int) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self._metrics = metrics

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        limited = response is not None and response.status_code == 429
        if limited and self._metrics is not None:
            method = urlparse(request.url).path.rsplit("/", 1)[-1] or "unknown"
            self._metrics.slack_api_errors.labels(method=method, error="ratelimited").inc()
        return limited


def web_client(*, token: str | None, base_url: str, metrics: BotMetrics | None = None) -> WebClient:
    """A `WebClient` that retries rate limits and connection errors."""
    return WebClient(
        token=token,
        base_url=base_url,
        timeout=REQUEST_TIMEOUT_S,
        retry_handlers=[
            ConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
            CountingRateLimitHandler(metrics, RATE_LIMIT_RETRIES),
        ],
    )


class Pacer:
    """At most one call per `interval_s` per key. `wait` sleeps until the caller's slot
    (FIFO-ish); `try_take` never sleeps: it takes the slot if it is free now, else says how
    long until it is."""

    def __init__(
        self,
        interval_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._interval = interval_s
        self._clock = clock
        self._sleep = sleep
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, key: str) -> None:
        with self._lock:
            now = self._clock()
            slot = max(now, self._next.get(key, 0.0))
            self._next[key] = slot + self._interval
            if len(self._next) > 10_000:  # forget keys whose slot is long past
                self._next = {k: v for k, v in self._next.items() if v > now}
        if slot > now:
            self._sleep(slot - now)

    def try_take(self, key: str) -> float:
        """0.0 if the key's slot was free and is now taken; else the seconds until it is free
        (nothing taken: ask again then)."""
        with self._lock:
            now = self._clock()
            slot = self._next.get(key, 0.0)
            if slot > now:
                return slot - now
            self._next[key] = now + self._interval
            return 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Posted:
    channel: str
    ts: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UserGroup:
    id: str
    handle: str  # without the @
    users: tuple[str, ...]


class SlackIO:
    def __init__(
        self,
        client: WebClient,
        *,
        metrics: BotMetrics | None = None,
        post_interval_s: float = 1.0,
        update_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self._metrics = metrics
        self.posts = Pacer(post_interval_s, clock=clock)
        self.updates = Pacer(update_interval_s, clock=clock)
        self._closed = False
        self._unsent: list[_UnsentFile] = []  # files whose message was posted without them
        # Files of messages posted with wait=False, per channel, waiting for its slot.
        self._due: dict[str, deque[_UnsentFile]] = {}
        self._unsent_lock = threading.Lock()

    def close(self) -> None:
        """Refuse every further call (shutdown: what was not said is re-rendered from
        storage at the next start)."""
        self._closed = True

    # ------------------------------------------------------------------------ plumbing

    def _call(self, method: str, call: Callable[[], T]) -> T:
        if self._closed:
            raise SlackCallFailed(method, "shutting_down")
        try:
            return call()
        except SlackApiError as e:
            error = str(e.response.get("error", "unknown")) if e.response else "unknown"
            self._count(method, error)
            raise SlackCallFailed(method, error) from e
        except (URLError, OSError, SlackClientError) as e:
            self._count(method, "connection_error")
            raise SlackCallFailed(method, f"connection_error: {e}") from e

    def _slot(self, pacer: Pacer, key: str, *, wait: bool, method: str) -> None:
        """Take `key`'s slot: sleep for it, or (`wait=False`) raise `SlotBusy` if not free."""
        if self._closed:
            raise SlackCallFailed(method, "shutting_down")
        if wait:
            pacer.wait(key)
            return
        delay = pacer.try_take(key)
        if delay > 0:
            raise SlotBusy(key, delay)

    def _count(self, method: str, error: str) -> None:
        logger.warning("slack %s failed: %s", method, error)
        if self._metrics is not None:
            self._metrics.slack_api_errors.labels(method=method, error=error).inc()

    # ------------------------------------------------------------------------ messages

    def post(
        self, channel: str, message: Message, *, thread_ts: str | None = None, wait: bool = True
    ) -> Posted:
        """Post `message` (and upload its files next to it). Waits for the channel's slot, or
        with `wait=False` raises `SlotBusy` (nothing posted) when it is not free; its files
        then go out as the channel's slots come (`send_files`).

        Raises `SlackCallFailed` only when the message itself was not posted: a file that
        fails is queued for `retry_files`, so a caller that records `Posted` never posts the
        message twice."""
        text, blocks = _redacted(message.payload())
        if not wait:
            self.send_files(channel)  # files of earlier messages go first
        self._slot(self.posts, channel, wait=wait, method="chat.postMessage")
        response = self._call(
            "chat.postMessage",
            lambda: self.client.chat_postMessage(
                channel=channel, text=text, blocks=blocks, thread_ts=thread_ts, unfurl_links=False
            ),
        )
        posted = Posted(channel=str(response["channel"]), ts=str(response["ts"]))
        for attachment in message.files:
            self.attach(posted.channel, attachment, thread_ts=thread_ts, wait=wait)
        return posted

    def update(self, channel: str, ts: str, message: Message, *, wait: bool = True) -> None:
        """Replace a message's text and blocks (files are not re-uploaded). Waits for the
        message's slot, or with `wait=False` raises `SlotBusy` (nothing sent)."""
        text, blocks = _redacted(message.payload())
        self._slot(self.updates, f"{channel}/{ts}", wait=wait, method="chat.update")
        self._call(
            "chat.update",
            lambda: self.client.chat_update(channel=channel, ts=ts, text=text, blocks=blocks),
        )

    def upload(
        self, channel: str, attachment: Attachment, *, thread_ts: str | None, wait: bool = True
    ) -> None:
        self._slot(self.posts, channel, wait=wait, method="files.completeUploadExternal")
        self._upload(_UnsentFile(channel=channel, thread_ts=thread_ts, file=attachment))

    def attach(
        self, channel: str, attachment: Attachment, *, thread_ts: str | None, wait: bool = True
    ) -> bool:
        """Upload a file next to a message already posted; on failure queue it for
        `retry_files` instead of raising (the message stands without it). True if uploaded.

        With `wait=False` the file joins the channel's queue and goes out now if the slot is
        free, else at the channel's next `post(wait=False)` or `send_files`; never raises."""
        unsent = _UnsentFile(channel=channel, thread_ts=thread_ts, file=attachment)
        if not wait:
            with self._unsent_lock:
                self._due.setdefault(channel, deque()).append(unsent)
            try:
                self.send_files(channel)
            except (SlotBusy, SlackCallFailed):
                return False
            return True
        try:
            self.upload(channel, attachment, thread_ts=thread_ts)
        except SlackCallFailed as e:
            self._file_failed(unsent, e)
            return False
        return True

    def send_files(self, channel: str) -> None:
        """Upload the files queued by `attach(wait=False)` for `channel`, in order, as its
        slots allow. Raises `SlotBusy` while some remain (a failed upload goes to
        `retry_files`, as in `attach`)."""
        while True:
            with self._unsent_lock:
                if not self._due.get(channel):
                    self._due.pop(channel, None)
                    return
            self._slot(self.posts, channel, wait=False, method="files.completeUploadExternal")
            with self._unsent_lock:
                queue = self._due.get(channel)
                if not queue:
                    return  # another lane sent it meanwhile
                unsent = queue.popleft()
            try:
                self._upload(unsent)
            except SlackCallFailed as e:
                self._file_failed(unsent, e)

    def _upload(self, unsent: _UnsentFile) -> None:
        """`files_upload_v2`, its slot already taken."""
        attachment = unsent.file
        self._call(
            "files.completeUploadExternal",
            lambda: self.client.files_upload_v2(
                channel=unsent.channel,
                thread_ts=unsent.thread_ts,
                content=(
                    redact_text(attachment.content)
                    if isinstance(attachment.content, str)
                    else attachment.content
                ),
                filename=attachment.filename,
                title=attachment.title,
            ),
        )

    def retry_files(self) -> int:
        """Try once more each file queued by `attach`; returns how many are still queued."""
        with self._unsent_lock:
            queued, self._unsent = self._unsent, []
        for unsent in queued:
            try:
                self.upload(unsent.channel, unsent.file, thread_ts=unsent.thread_ts)
            except SlackCallFailed as e:
                self._file_failed(replace(unsent, tries=unsent.tries + 1), e)
        with self._unsent_lock:
            return len(self._unsent)

    def _file_failed(self, unsent: _UnsentFile, error: SlackCallFailed) -> None:
        if unsent.tries >= FILE_TRIES:
            logger.warning(
                "file %s for %s dropped after %d tries (its message stands without it): %s",
                unsent.file.filename,
                unsent.channel,
                unsent.tries,
                error,
            )
            return
        logger.warning(
            "file %s for %s not uploaded (try %d of %d); will retry on its own: %s",
            unsent.file.filename,
            unsent.channel,
            unsent.tries,
            FILE_TRIES,
            error,
        )
        with self._unsent_lock:
            self._unsent.append(unsent)

    def ephemeral(
        self, channel: str, user: str, text: str, *, thread_ts: str | None = None
    ) -> None:
        # Paced per person: Slack's one-per-second limit is chat.postMessage's per channel
        # (chat.postEphemeral is a Tier 4 method), and one person's answers must not hold
        # back another's.
        self.posts.wait(f"{channel}/{user}")
        self._call(
            "chat.postEphemeral",
            lambda: self.client.chat_postEphemeral(
                channel=channel, user=user, text=redact_text(text), thread_ts=thread_ts
            ),
        )

    def direct_message(self, user: str, text: str) -> None:
        response = self._call(
            "conversations.open", lambda: self.client.conversations_open(users=[user])
        )
        channel = str(_get(response, "channel", {}).get("id", ""))
        self.posts.wait(channel)
        self._call(
            "chat.postMessage",
            lambda: self.client.chat_postMessage(channel=channel, text=redact_text(text)),
        )

    def tell(self, user: str, text: str, *, channel: str | None = None) -> None:
        """Say something to one person: ephemeral in `channel` when they can see it there,
        else in a direct message (a click in the App Home has no channel)."""
        if channel:
            try:
                self.ephemeral(channel, user, text)
                return
            except SlackCallFailed as e:
                if e.error not in _NOT_THERE:
                    raise
        self.direct_message(user, text)

    # ------------------------------------------------------------------------ modals

    def open_view(self, trigger_id: str, view: View) -> str:
        response = self._call(
            "views.open", lambda: self.client.views_open(trigger_id=trigger_id, view=view.payload())
        )
        return str(_get(response, "view", {}).get("id", ""))

    def update_view(self, view_id: str, view: View) -> None:
        self._call(
            "views.update", lambda: self.client.views_update(view_id=view_id, view=view.payload())
        )

    # ------------------------------------------------------------------------ channels

    def create_channel(self, name: str) -> str:
        response = self._call(
            "conversations.create", lambda: self.client.conversations_create(name=name)
        )
        return str(_get(response, "channel", {})["id"])

    def find_channel(self, name: str) -> tuple[str, bool] | None:
        """(id, bot is a member) of the public channel called `name`, or None."""
        cursor: str | None = None
        while True:
            response = self._call(
                "conversations.list",
                lambda cursor=cursor: self.client.conversations_list(  # type: ignore[misc]
                    types="public_channel", limit=1000, cursor=cursor
                ),
            )
            for channel in _get(response, "channels", []):
                if channel.get("name") == name:
                    return str(channel["id"]), bool(channel.get("is_member"))
            cursor = _get(response, "response_metadata", {}).get("next_cursor") or None
            if not cursor:
                return None

    def join(self, channel: str) -> None:
        self._call("conversations.join", lambda: self.client.conversations_join(channel=channel))

    def invite(self, channel: str, users: list[str]) -> None:
        self._call(
            "conversations.invite",
            lambda: self.client.conversations_invite(channel=channel, users=users),
        )

    def members(self, channel: str) -> set[str]:
        response = self._call(
            "conversations.members",
            lambda: self.client.conversations_members(channel=channel, limit=1000),
        )
        return {str(m) for m in _get(response, "members", [])}

    def set_topic(self, channel: str, topic: str) -> None:
        self._call(
            "conversations.setTopic",
            lambda: self.client.conversations_setTopic(channel=channel, topic=topic[:250]),
        )

    def rename_channel(self, channel: str, name: str) -> None:
        self._call(
            "conversations.rename",
            lambda: self.client.conversations_rename(channel=channel, name=name),
        )

    def pin(self, channel: str, ts: str) -> None:
        self._call("pins.add", lambda: self.client.pins_add(channel=channel, timestamp=ts))

    # ------------------------------------------------------------------------ people

    def bot_user_id(self) -> str:
        """`auth.test`: who the token is (fails at start when the token is wrong)."""
        response = self._call("auth.test", self.client.auth_test)
        return str(_get(response, "user_id", ""))

    def user_groups(self) -> list[UserGroup]:
        response = self._call(
            "usergroups.list", lambda: self.client.usergroups_list(include_users=True)
        )
        return [
            UserGroup(
                id=str(g["id"]),
                handle=str(g.get("handle", "")),
                users=tuple(str(u) for u in g.get("users") or ()),
            )
            for g in _get(response, "usergroups", [])
        ]

    def user_group_members(self, group_id: str) -> list[str]:
        response = self._call(
            "usergroups.users.list",
            lambda: self.client.usergroups_users_list(usergroup=group_id),
        )
        return [str(u) for u in _get(response, "users", [])]


@dataclass(frozen=True, slots=True, kw_only=True)
class _UnsentFile:
    channel: str
    thread_ts: str | None
    file: Attachment
    tries: int = 1


def _redacted(payload: tuple[str, list[Block]]) -> tuple[str, list[Block]]:
    """The last net before Slack: every text of a message through `agents.redact` (what
    reaches a message has been redacted where it was collected; this catches what was not)."""
    text, blocks = payload
    return redact_text(text), [redact_mapping(block) for block in blocks]


def _get(response: SlackResponse, key: str, default: Any) -> Any:
    value = response.get(key, default)
    return default if value is None else value
