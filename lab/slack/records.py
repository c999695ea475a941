"""The workspace's records: users, groups, channels, messages, files, views.

Unlike the rest of Stratus these are mutable on purpose: they *are* the emulated workspace's
state, edited in place under the store's lock (a message is updated, a channel gains members,
a modal's stack grows). Everything that leaves the store — API responses, payloads to the
bot, page snapshots — is a fresh JSON copy made by `lab.slack.wire`, so no caller ever holds
a live record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from agents.model import JsonObject
from lab.slack.config import TokenKind


@dataclass(slots=True, kw_only=True)
class User:
    id: str
    name: str
    real_name: str
    title: str = ""
    is_admin: bool = False
    is_owner: bool = False
    is_bot: bool = False
    bot_id: str = ""
    email: str = ""
    tz: str = "UTC"


@dataclass(slots=True, kw_only=True)
class UserGroup:
    id: str
    handle: str
    name: str
    description: str = ""
    members: list[str] = field(default_factory=list)
    created: int = 0


@dataclass(slots=True, kw_only=True)
class TopicValue:
    value: str = ""
    creator: str = ""
    last_set: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Pin:
    ts: str
    created: int
    created_by: str


@dataclass(slots=True, kw_only=True)
class Channel:
    id: str
    name: str
    created: int
    creator: str
    is_private: bool = False
    is_im: bool = False
    im_user: str = ""  # for a direct message with the app: the human side
    is_general: bool = False
    is_archived: bool = False
    members: set[str] = field(default_factory=set)
    topic: TopicValue = field(default_factory=TopicValue)
    purpose: TopicValue = field(default_factory=TopicValue)
    pins: list[Pin] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class Message:
    ts: str
    channel: str
    user: str
    text: str = ""
    blocks: list[JsonObject] | None = None
    bot_id: str = ""
    app_id: str = ""
    subtype: str = ""
    thread_ts: str = ""  # set on replies, and on a parent once it has replies
    reply_ts: list[str] = field(default_factory=list)  # on a parent: its replies in order
    file_ids: list[str] = field(default_factory=list)
    reactions: dict[str, list[str]] = field(default_factory=dict)
    edited: JsonObject | None = None
    ephemeral_to: str = ""  # non-empty: only this user sees it; never in history
    metadata: JsonObject | None = None

    @property
    def is_reply(self) -> bool:
        return bool(self.thread_ts) and self.thread_ts != self.ts


@dataclass(slots=True, kw_only=True)
class File:
    id: str
    name: str
    title: str
    user: str
    created: int
    length: int  # announced by files.getUploadURLExternal
    alt_txt: str = ""
    snippet_type: str = ""
    mimetype: str = "application/octet-stream"
    filetype: str = "binary"
    upload_key: str = ""  # the secret part of the file's upload URL
    data: bytes | None = None  # None until the upload URL received the bytes
    completed: bool = False
    shares: dict[str, list[str]] = field(default_factory=dict)  # channel → message ts


class ViewType(StrEnum):
    MODAL = "modal"
    HOME = "home"


@dataclass(slots=True, kw_only=True)
class View:
    id: str
    type: ViewType
    user: str
    blocks: list[JsonObject]
    hash: str
    title: JsonObject | None = None
    submit: JsonObject | None = None
    close: JsonObject | None = None
    callback_id: str = ""
    private_metadata: str = ""
    external_id: str = ""
    clear_on_close: bool = False
    notify_on_close: bool = False
    root_view_id: str = ""
    previous_view_id: str | None = None
    values: dict[str, dict[str, JsonObject]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # block_id → message, from the app


@dataclass(slots=True, kw_only=True)
class Trigger:
    id: str
    user: str
    issued_at: float  # wall-clock monotonic seconds: triggers expire in real time
    exchanged: bool = False


class ResponseTarget(StrEnum):
    MESSAGE = "message"  # a button in a message: "original" is that message
    COMMAND = "command"  # a slash command: "original" is the last response posted


@dataclass(slots=True, kw_only=True)
class ResponseUrl:
    token: str
    target: ResponseTarget
    user: str
    channel: str
    issued_at: float
    original_ts: str = ""
    original_ephemeral: bool = False
    uses: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenGrant:
    token: str
    kind: TokenKind
    scopes: tuple[str, ...]
    user_id: str  # the bot user for bot tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class OutgoingEvent:
    """An event for the app; `subscription` is the app-manifest name it needs
    (`message.channels`, `member_joined_channel`, ...)."""

    subscription: str
    event: JsonObject
