"""The workspace's state and the one lock that guards it.

The server's event loop (Web API calls, Socket Mode, the page) and the test thread (the
`SlackWorkspace` facade) both read and write this store, so every access takes `lock`. Every
change bumps `version` and wakes whoever waits: `wait_until` in tests, the page's live
socket through `on_change` callbacks.

Ids are counters rendered in Slack's alphabet (C…, U…, F…, V…), so a run is reproducible;
message timestamps are Slack's "seconds.micros" strings, strictly increasing and unique across
the workspace.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from lab.slack.config import TokenKind, WorkspaceConfig
from lab.slack.records import (
    Channel,
    File,
    Message,
    ResponseTarget,
    ResponseUrl,
    TokenGrant,
    TopicValue,
    Trigger,
    User,
    UserGroup,
    View,
)

T = TypeVar("T")

_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"
SLACKBOT = "USLACKBOT"


class WorkspaceState:
    def __init__(self, config: WorkspaceConfig, *, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.base_url = ""  # "http://127.0.0.1:PORT", set once the server listens
        self.lock = threading.RLock()
        self._changed = threading.Condition(self.lock)
        self.version = 0
        self._listeners: list[Callable[[int], None]] = []
        self._counters: dict[str, int] = {}
        self._last_ts_us = 0
        self.users: dict[str, User] = {}
        self.groups: dict[str, UserGroup] = {}
        self.channels: dict[str, Channel] = {}
        self.messages: dict[str, dict[str, Message]] = {}  # channel → ts → message (ts order)
        self.ephemerals: dict[str, dict[str, Message]] = {}
        self.files: dict[str, File] = {}
        self.views: dict[str, View] = {}
        self.modal_stacks: dict[str, list[str]] = {}  # user → view ids, root first
        self.home_views: dict[str, str] = {}  # user → view id
        self.triggers: dict[str, Trigger] = {}
        self.response_urls: dict[str, ResponseUrl] = {}
        self.socket_tickets: set[str] = set()
        self.grants: dict[str, TokenGrant] = {}
        self.notices: dict[str, list[str]] = {}  # user → what Slack's client told them
        self._populate()

    # ------------------------------------------------------------------ set-up

    def _populate(self) -> None:
        cfg = self.config
        now = int(self.clock())
        bot = User(
            id=cfg.bot_user_id,
            name=cfg.bot_name,
            real_name=cfg.app_name,
            is_bot=True,
            bot_id=cfg.bot_id,
        )
        self.users[bot.id] = bot
        # Slackbot speaks for Slack itself: "/foo failed with the error ...", tombstones.
        self.users[SLACKBOT] = User(id=SLACKBOT, name="slackbot", real_name="Slackbot")
        for spec in cfg.users:
            self.users[spec.id] = User(
                id=spec.id,
                name=spec.name,
                real_name=spec.real_name or spec.name,
                title=spec.title,
                is_admin=spec.is_admin,
                is_owner=spec.is_owner,
                email=spec.email,
                tz=spec.tz,
            )
        for group in cfg.groups:
            self.groups[group.id] = UserGroup(
                id=group.id,
                handle=group.handle,
                name=group.name or group.handle,
                description=group.description,
                members=[self._user_ref(ref) for ref in group.members],
                created=now,
            )
        humans = [spec.id for spec in cfg.users]
        for channel_spec in cfg.channels:
            members: set[str] = set()
            for ref in channel_spec.members:
                members.update(humans if ref == "*" else [self._user_ref(ref)])
            if channel_spec.bot_member:
                members.add(bot.id)
            channel = Channel(
                id=channel_spec.id or self.new_id("C"),
                name=channel_spec.name,
                created=now,
                creator=humans[0] if humans else bot.id,
                is_private=channel_spec.is_private,
                is_general=channel_spec.is_general,
                members=members,
                topic=TopicValue(
                    value=channel_spec.topic, last_set=now if channel_spec.topic else 0
                ),
                purpose=TopicValue(value=channel_spec.purpose),
            )
            self.add_channel(channel)
        self.grants[cfg.bot_token] = TokenGrant(
            token=cfg.bot_token, kind=TokenKind.BOT, scopes=cfg.bot_scopes, user_id=bot.id
        )
        self.grants[cfg.app_token] = TokenGrant(
            token=cfg.app_token, kind=TokenKind.APP, scopes=cfg.app_scopes, user_id=""
        )
        for extra in cfg.extra_tokens:
            user_id = extra.user_id if extra.kind is TokenKind.USER else bot.id
            self.grants[extra.token] = TokenGrant(
                token=extra.token, kind=extra.kind, scopes=extra.scopes, user_id=user_id
            )

    def _user_ref(self, ref: str) -> str:
        if ref in self.users:
            return ref
        user = self.user_by_name(ref)
        if user is None:
            raise ValueError(f"workspace config names an unknown user: {ref!r}")
        return user.id

    # ------------------------------------------------------------------ ids and time

    def new_id(self, prefix: str) -> str:
        with self.lock:
            n = self._counters.get(prefix, 0) + 1
            self._counters[prefix] = n
            digits = ""
            while n:
                n, r = divmod(n, len(_ALPHABET))
                digits = _ALPHABET[r] + digits
            return f"{prefix}0LAB{digits.rjust(5, '0')}"

    def new_ts(self) -> str:
        """A message timestamp: the clock in micros, bumped to stay unique and increasing."""
        with self.lock:
            now_us = int(self.clock() * 1_000_000)
            self._last_ts_us = max(now_us, self._last_ts_us + 1)
            seconds, micros = divmod(self._last_ts_us, 1_000_000)
            return f"{seconds}.{micros:06d}"

    def now(self) -> int:
        return int(self.clock())

    # ------------------------------------------------------------------ change notification

    def touch(self) -> None:
        """Record that something changed; wakes waiters and page listeners."""
        with self.lock:
            self.version += 1
            version = self.version
            self._changed.notify_all()
            listeners = list(self._listeners)
        for listener in listeners:
            listener(version)

    def on_change(self, listener: Callable[[int], None]) -> None:
        with self.lock:
            self._listeners.append(listener)

    def wait_until(self, predicate: Callable[[], T | None], timeout: float) -> T | None:
        """Evaluate `predicate` under the lock after every change until it returns a truthy
        value or `timeout` (seconds) passes; returns that value or None."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                result = predicate()
                if result:
                    return result
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)

    # ------------------------------------------------------------------ lookups

    def user_by_name(self, name: str) -> User | None:
        name = name.removeprefix("@")
        return next((u for u in self.users.values() if u.name == name), None)

    def channel_by_name(self, name: str) -> Channel | None:
        name = name.removeprefix("#")
        return next(
            (c for c in self.channels.values() if c.name == name and not c.is_im),
            None,
        )

    def find_channel(self, ref: str, *, allow_names: bool = False) -> Channel | None:
        """A channel by id; by name or user id (→ the app's DM with that user) where Slack
        accepts those (chat.postMessage and friends)."""
        with self.lock:
            if ref in self.channels:
                return self.channels[ref]
            if not allow_names:
                return None
            if ref in self.users and not self.users[ref].is_bot:
                return self.im_channel(ref)
            return self.channel_by_name(ref)

    def im_channel(self, user_id: str) -> Channel:
        """The app's direct-message channel with a user, opened on first use."""
        with self.lock:
            for channel in self.channels.values():
                if channel.is_im and channel.im_user == user_id:
                    return channel
            channel = Channel(
                id=self.new_id("D"),
                name=user_id,
                created=self.now(),
                creator=user_id,
                is_private=True,
                is_im=True,
                im_user=user_id,
                members={user_id, self.config.bot_user_id},
            )
            self.add_channel(channel)
            return channel

    def add_channel(self, channel: Channel) -> None:
        with self.lock:
            self.channels[channel.id] = channel
            self.messages.setdefault(channel.id, {})
            self.ephemerals.setdefault(channel.id, {})

    def message(self, channel_id: str, ts: str) -> Message | None:
        with self.lock:
            return self.messages.get(channel_id, {}).get(ts)

    def ephemeral(self, channel_id: str, ts: str) -> Message | None:
        with self.lock:
            return self.ephemerals.get(channel_id, {}).get(ts)

    # ------------------------------------------------------------------ messages

    def add_message(self, message: Message) -> Message:
        """Store a message (or an ephemeral one) and link a reply to its parent."""
        with self.lock:
            if message.ephemeral_to:
                self.ephemerals[message.channel][message.ts] = message
            else:
                self.messages[message.channel][message.ts] = message
                if message.is_reply:
                    parent = self.messages[message.channel][message.thread_ts]
                    parent.thread_ts = parent.ts
                    parent.reply_ts.append(message.ts)
        self.touch()
        return message

    def remove_message(self, message: Message) -> None:
        with self.lock:
            if message.ephemeral_to:
                self.ephemerals[message.channel].pop(message.ts, None)
            else:
                self.messages[message.channel].pop(message.ts, None)
                if message.is_reply:
                    parent = self.messages[message.channel].get(message.thread_ts)
                    if parent is not None and message.ts in parent.reply_ts:
                        parent.reply_ts.remove(message.ts)
                channel = self.channels[message.channel]
                channel.pins = [p for p in channel.pins if p.ts != message.ts]
        self.touch()

    def add_notice(self, user_id: str, text: str) -> None:
        with self.lock:
            self.notices.setdefault(user_id, []).append(text)
        self.touch()

    # ------------------------------------------------------------------ triggers & response URLs

    def issue_trigger(self, user_id: str) -> str:
        with self.lock:
            trigger_id = f"{self.now()}.{self.new_id('T')[5:]}.{secrets.token_hex(10)}"
            self.triggers[trigger_id] = Trigger(
                id=trigger_id, user=user_id, issued_at=time.monotonic()
            )
            return trigger_id

    def issue_response_url(
        self,
        *,
        target: ResponseTarget,
        user: str,
        channel: str,
        original_ts: str = "",
        original_ephemeral: bool = False,
    ) -> str:
        """Returns the token; the URL is `{base}/response/{token}`."""
        with self.lock:
            token = secrets.token_urlsafe(18)
            self.response_urls[token] = ResponseUrl(
                token=token,
                target=target,
                user=user,
                channel=channel,
                issued_at=time.monotonic(),
                original_ts=original_ts,
                original_ephemeral=original_ephemeral,
            )
            return token

    def issue_socket_ticket(self) -> str:
        with self.lock:
            ticket = secrets.token_hex(12)
            self.socket_tickets.add(ticket)
            return ticket

    def redeem_socket_ticket(self, ticket: str) -> bool:
        with self.lock:
            if ticket in self.socket_tickets:
                self.socket_tickets.discard(ticket)
                return True
            return False
