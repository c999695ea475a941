"""pins.* and reactions.add: marking messages."""

from __future__ import annotations

import re

from agents.model import JsonObject
from lab.slack.api.context import Call
from lab.slack.errors import ApiError
from lab.slack.records import Channel, Message, Pin
from lab.slack.wire import message_json

MAX_PINS = 100
_EMOJI_NAME = re.compile(r"^[a-z0-9_+\-']+$")


def _target(call: Call, *, ts_arg: str = "timestamp") -> tuple[Channel, Message]:
    args = call.args
    channel = call.channel(args.required("channel", error="channel_not_found"))
    ts = args.text(ts_arg)
    if not ts:
        raise ApiError("no_item_specified")
    try:
        float(ts)
    except ValueError:
        raise ApiError("bad_timestamp") from None
    message = call.state.message(channel.id, ts)
    if message is None:
        raise ApiError("message_not_found")
    return channel, message


def add(call: Call) -> JsonObject:
    call.require_scope("pins:write")
    state = call.state
    channel, message = _target(call)
    if call.actor not in channel.members:
        raise ApiError("not_in_channel")
    with state.lock:
        if any(pin.ts == message.ts for pin in channel.pins):
            raise ApiError("already_pinned")
        if len(channel.pins) >= MAX_PINS:
            raise ApiError("too_many_pins")
        channel.pins.append(Pin(ts=message.ts, created=state.now(), created_by=call.actor))
    state.touch()
    return {"ok": True}


def remove(call: Call) -> JsonObject:
    call.require_scope("pins:write")
    state = call.state
    channel, message = _target(call)
    with state.lock:
        if not any(pin.ts == message.ts for pin in channel.pins):
            raise ApiError("no_pin")
        channel.pins = [p for p in channel.pins if p.ts != message.ts]
    state.touch()
    return {"ok": True}


def list_(call: Call) -> JsonObject:
    call.require_scope("pins:read")
    state = call.state
    channel = call.channel(call.args.required("channel", error="channel_not_found"))
    items = [
        {
            "type": "message",
            "created": pin.created,
            "created_by": pin.created_by,
            "channel": channel.id,
            "message": message_json(state, state.messages[channel.id][pin.ts]),
        }
        for pin in reversed(channel.pins)
    ]
    return {"ok": True, "items": items}


def react(call: Call) -> JsonObject:
    call.require_scope("reactions:write")
    state = call.state
    channel, message = _target(call)
    if channel.is_archived:
        raise ApiError("is_archived")
    name = call.args.text("name").strip(":")
    if not name or not _EMOJI_NAME.match(name):
        raise ApiError("invalid_name")
    with state.lock:
        users = message.reactions.setdefault(name, [])
        if call.actor in users:
            raise ApiError("already_reacted")
        users.append(call.actor)
    state.touch()
    return {"ok": True}
