"""Message content as Slack accepts it, wherever it comes from.

A bot can put text and blocks into a channel four ways: `chat.postMessage`/`chat.update`/
`chat.postEphemeral`, a `response_url`, and the acknowledgement of a slash command. Slack
applies the same rules to all of them — some text or blocks, blocks within Block Kit's limits
(`invalid_blocks`), text within 40,000 characters (`msg_too_long`) — so they live here once.
"""

from __future__ import annotations

from typing import Any

from agents.model import JsonObject
from lab.slack.blocks import check_message_blocks, normalise
from lab.slack.errors import ApiError
from lab.slack.records import Channel, Message
from lab.slack.store import WorkspaceState

MAX_TEXT = 40_000


def content(
    state: WorkspaceState, *, text: str, blocks: Any, required: bool = True
) -> tuple[str, list[JsonObject] | None]:
    """Validated `(text, blocks)`; blocks get Slack's generated ids."""
    if blocks is not None and not isinstance(blocks, list):
        raise ApiError("invalid_blocks_format")
    if blocks is not None:
        errors = check_message_blocks(blocks)
        if errors:
            raise ApiError(
                "invalid_blocks",
                errors=errors,
                response_metadata={"messages": [f"[ERROR] {e}" for e in errors]},
            )
        blocks = normalise(blocks, lambda: state.new_id("b"))
    if required and not text and not blocks:
        raise ApiError("no_text")
    if len(text) > MAX_TEXT:
        raise ApiError("msg_too_long")
    return text, blocks


def thread_root(state: WorkspaceState, channel: Channel, thread_ts: str) -> str:
    """The parent ts a reply goes under. A reply to a reply joins the same thread; an
    unknown ts is refused (stricter than Slack, which would post a stray message)."""
    if not thread_ts:
        return ""
    parent = state.message(channel.id, thread_ts)
    if parent is None:
        raise ApiError("thread_not_found")
    return parent.thread_ts if parent.is_reply else parent.ts


def bot_message(
    state: WorkspaceState,
    channel: Channel,
    *,
    text: str,
    blocks: list[JsonObject] | None,
    thread_ts: str = "",
    reply_broadcast: bool = False,
    ephemeral_to: str = "",
    metadata: JsonObject | None = None,
) -> Message:
    """Store a message from the app's bot user."""
    cfg = state.config
    message = Message(
        ts=state.new_ts(),
        channel=channel.id,
        user=cfg.bot_user_id,
        text=text,
        blocks=blocks,
        bot_id=cfg.bot_id,
        app_id=cfg.app_id,
        thread_ts=thread_ts,
        subtype="thread_broadcast" if thread_ts and reply_broadcast else "",
        ephemeral_to=ephemeral_to,
        metadata=metadata,
    )
    return state.add_message(message)
