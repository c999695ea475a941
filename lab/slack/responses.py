"""`response_url`s: how an app answers a click or a slash command without the Web API.

Each interaction from a message and each slash command comes with a URL valid for 30 minutes
and five uses. A JSON body posted there can `delete_original`, `replace_original`, or post a
new message — ephemeral to the user by default, to the channel with
`response_type: in_channel`. "Original" is the message the button was in; for a slash
command it is the last response posted through the same URL. A slash command's
acknowledgement body is treated the same way (Bolt's `ack("text")`), which is how it shows up
for the user.

Without `replace_original`, a response to a button posts a new (ephemeral) message, as with
Block Kit today; the legacy attachment buttons that replaced by default are not emulated.
"""

from __future__ import annotations

import time
from typing import Any

from lab.slack.content import bot_message, content, thread_root
from lab.slack.errors import ApiError
from lab.slack.events import message_events
from lab.slack.records import Message, OutgoingEvent, ResponseTarget, ResponseUrl
from lab.slack.store import WorkspaceState


def redeem(state: WorkspaceState, token: str) -> ResponseUrl:
    """The response URL for `token`, counting one use."""
    with state.lock:
        record = state.response_urls.get(token)
        if record is None:
            raise ApiError("invalid_token", status=404)
        if time.monotonic() - record.issued_at > state.config.response_url_ttl_s:
            raise ApiError("expired_url", status=404)
        if record.uses >= state.config.response_url_max_uses:
            raise ApiError("used_url", status=404)
        record.uses += 1
        return record


def _original(state: WorkspaceState, record: ResponseUrl) -> Message | None:
    if not record.original_ts:
        return None
    if record.original_ephemeral:
        return state.ephemeral(record.channel, record.original_ts)
    return state.message(record.channel, record.original_ts)


def apply(state: WorkspaceState, record: ResponseUrl, body: dict[str, Any]) -> list[OutgoingEvent]:
    """Carry out one response; returns the events it causes for the app."""
    with state.lock:
        original = _original(state, record)
        if _flag(body.get("delete_original")):
            if original is None:
                raise ApiError("message_not_found", status=404)
            state.remove_message(original)
            return []
        text, blocks = content(state, text=str(body.get("text", "")), blocks=body.get("blocks"))
        if _flag(body.get("replace_original")):
            if original is None:
                raise ApiError("message_not_found", status=404)
            original.text = text
            original.blocks = blocks
            original.edited = {"user": state.config.bot_user_id, "ts": state.new_ts()}
            state.touch()
            return []
        channel = state.channels[record.channel]
        thread_ts = thread_root(state, channel, str(body.get("thread_ts", "")))
        in_channel = body.get("response_type") == "in_channel"
        message = bot_message(
            state,
            channel,
            text=text,
            blocks=blocks,
            thread_ts=thread_ts,
            ephemeral_to="" if in_channel else record.user,
        )
        if record.target is ResponseTarget.COMMAND:
            record.original_ts = message.ts
            record.original_ephemeral = not in_channel
        if in_channel and state.config.echo_bot_messages:
            return message_events(state, message)
        return []


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() in ("true", "1")
    return bool(value)
