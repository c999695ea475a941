"""conversations.*: channels, their members, topics and history."""

from __future__ import annotations

import re

from agents.model import JsonObject
from lab.slack.api.context import Call, paginate
from lab.slack.errors import ApiError
from lab.slack.events import member_joined_event
from lab.slack.records import Channel, Message, TopicValue
from lab.slack.store import SLACKBOT
from lab.slack.wire import channel_json, message_json

NAME_MAX = 80
TOPIC_MAX = 250
_NAME_OK = re.compile(r"^[a-z0-9_\-]+$")
_PUNCTUATION = re.compile(r"^[\-_]+$")


def _members_scope(call: Call, channel: Channel) -> None:
    call.require_channel_scope(channel, family="manage")


def _json(call: Call, channel: Channel) -> JsonObject:
    return channel_json(call.state, channel, viewer=call.actor)


def create(call: Call) -> JsonObject:
    args, state = call.args, call.state
    is_private = args.flag("is_private")
    call.require_scope("groups:write" if is_private else "channels:manage")
    name = args.text("name")
    if not name:
        raise ApiError("invalid_name_required")
    if len(name) > NAME_MAX:
        raise ApiError("invalid_name_maxlength")
    if _PUNCTUATION.match(name):
        raise ApiError("invalid_name_punctuation")
    if not _NAME_OK.match(name):
        raise ApiError("invalid_name_specials")
    with state.lock:
        if state.channel_by_name(name) is not None:
            raise ApiError("name_taken")
        channel = Channel(
            id=state.new_id("C"),
            name=name,
            created=state.now(),
            creator=call.actor,
            is_private=is_private,
            members={call.actor},
        )
        state.add_channel(channel)
    state.touch()
    return {"ok": True, "channel": _json(call, channel)}


def rename(call: Call) -> JsonObject:
    """conversations.rename: a member with the manage scope renames a channel."""
    args, state = call.args, call.state
    channel = call.channel(args.required("channel", error="channel_not_found"))
    if channel.is_im:
        raise ApiError("method_not_supported_for_channel_type")
    call.require_scope("groups:write" if channel.is_private else "channels:manage")
    if channel.is_archived:
        raise ApiError("is_archived")
    if call.actor not in channel.members:
        raise ApiError("not_in_channel")
    name = args.text("name")
    if not name:
        raise ApiError("invalid_name_required")
    if len(name) > NAME_MAX:
        raise ApiError("invalid_name_maxlength")
    if _PUNCTUATION.match(name):
        raise ApiError("invalid_name_punctuation")
    if not _NAME_OK.match(name):
        raise ApiError("invalid_name_specials")
    with state.lock:
        other = state.channel_by_name(name)
        if other is not None and other.id != channel.id:
            raise ApiError("name_taken")
        if channel.name != name:
            channel.name = name
            state.add_message(
                Message(
                    ts=state.new_ts(),
                    channel=channel.id,
                    user=call.actor,
                    text=f"renamed the channel to #{name}",
                    subtype="channel_name",
                )
            )
    state.touch()
    return {"ok": True, "channel": _json(call, channel)}


def invite(call: Call) -> JsonObject:
    args, state = call.args, call.state
    channel = call.channel(args.required("channel", error="channel_not_found"))
    if channel.is_im:
        raise ApiError("method_not_supported_for_channel_type")
    _members_scope(call, channel)
    if channel.is_archived:
        raise ApiError("is_archived")
    if call.actor not in channel.members:
        raise ApiError("not_in_channel")
    users = [u.strip() for u in args.text("users").split(",") if u.strip()]
    if not users:
        raise ApiError("no_user")
    for user in users:
        if user not in state.users or user == SLACKBOT:
            raise ApiError("user_not_found")
        if user == call.actor:
            raise ApiError("cant_invite_self")
    already = [u for u in users if u in channel.members]
    if already:
        raise ApiError(
            "already_in_channel",
            errors=[{"user": u, "ok": False, "error": "already_in_channel"} for u in already],
        )
    with state.lock:
        channel.members.update(users)
        for user in users:
            call.events.extend(member_joined_event(state, channel, user, inviter=call.actor))
    state.touch()
    return {"ok": True, "channel": _json(call, channel)}


def join(call: Call) -> JsonObject:
    call.require_scope("channels:join")
    state = call.state
    channel = call.channel(call.args.required("channel", error="channel_not_found"))
    if channel.is_private or channel.is_im:
        raise ApiError("method_not_supported_for_channel_type")
    if channel.is_archived:
        raise ApiError("is_archived")
    if call.actor in channel.members:
        return {
            "ok": True,
            "channel": _json(call, channel),
            "warning": "already_in_channel",
            "response_metadata": {"warnings": ["already_in_channel"]},
        }
    with state.lock:
        channel.members.add(call.actor)
        call.events.extend(member_joined_event(state, channel, call.actor))
    state.touch()
    return {"ok": True, "channel": _json(call, channel)}


def info(call: Call) -> JsonObject:
    channel = call.channel(call.args.required("channel", error="channel_not_found"))
    call.require_channel_scope(channel, family="read")
    return {"ok": True, "channel": _json(call, channel)}


def members(call: Call) -> JsonObject:
    channel = call.channel(call.args.required("channel", error="channel_not_found"))
    call.require_channel_scope(channel, family="read")
    page, cursor = paginate(sorted(channel.members), call.args, default_limit=100, max_limit=1000)
    return {"ok": True, "members": page, "response_metadata": {"next_cursor": cursor}}


def list_(call: Call) -> JsonObject:
    args, state = call.args, call.state
    types = {t.strip() for t in args.text("types", "public_channel").split(",") if t.strip()}
    scopes = {"public_channel": "channels:read", "private_channel": "groups:read", "im": "im:read"}
    for kind in sorted(types & set(scopes)):
        call.require_scope(scopes[kind])
    exclude_archived = args.flag("exclude_archived")
    found: list[Channel] = []
    for channel in state.channels.values():
        if channel.is_im:
            wanted = "im" in types and call.actor in channel.members
        elif channel.is_private:
            wanted = "private_channel" in types and call.actor in channel.members
        else:
            wanted = "public_channel" in types
        if wanted and not (exclude_archived and channel.is_archived):
            found.append(channel)
    page, cursor = paginate(found, args, default_limit=100, max_limit=1000)
    return {
        "ok": True,
        "channels": [_json(call, c) for c in page],
        "response_metadata": {"next_cursor": cursor},
    }


def _ts_bound(call: Call, name: str, error: str) -> float | None:
    raw = call.args.text(name)
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise ApiError(error) from None


def _window(call: Call, messages: list[Message]) -> list[Message]:
    oldest = _ts_bound(call, "oldest", "invalid_ts_oldest")
    latest = _ts_bound(call, "latest", "invalid_ts_latest")
    inclusive = call.args.flag("inclusive")

    def inside(message: Message) -> bool:
        ts = float(message.ts)
        if oldest is not None and (ts < oldest or (ts == oldest and not inclusive)):
            return False
        return latest is None or ts < latest or (ts == latest and inclusive)

    return [m for m in messages if inside(m)]


def history(call: Call) -> JsonObject:
    state = call.state
    channel = call.channel(call.args.required("channel", error="channel_not_found"))
    call.require_channel_scope(channel, family="history")
    if call.actor not in channel.members:
        raise ApiError("not_in_channel")
    listed = [
        m
        for m in state.messages[channel.id].values()
        if not m.is_reply or m.subtype == "thread_broadcast"
    ]
    newest_first = list(reversed(_window(call, listed)))
    page, cursor = paginate(newest_first, call.args, default_limit=100, max_limit=999)
    return {
        "ok": True,
        "messages": [message_json(state, m) for m in page],
        "has_more": bool(cursor),
        "pin_count": len(channel.pins),
        "channel_actions_ts": None,
        "channel_actions_count": 0,
        "response_metadata": {"next_cursor": cursor},
    }


def replies(call: Call) -> JsonObject:
    args, state = call.args, call.state
    channel = call.channel(args.required("channel", error="channel_not_found"))
    call.require_channel_scope(channel, family="history")
    message = state.message(channel.id, args.required("ts", error="thread_not_found"))
    if message is None:
        raise ApiError("thread_not_found")
    parent = state.messages[channel.id][message.thread_ts] if message.is_reply else message
    thread = [parent, *(state.messages[channel.id][ts] for ts in parent.reply_ts)]
    page, cursor = paginate(_window(call, thread), args, default_limit=1000, max_limit=1000)
    return {
        "ok": True,
        "messages": [message_json(state, m) for m in page],
        "has_more": bool(cursor),
        "response_metadata": {"next_cursor": cursor},
    }


def set_topic(call: Call) -> JsonObject:
    args, state = call.args, call.state
    channel = call.channel(args.required("channel", error="channel_not_found"))
    if channel.is_im:
        raise ApiError("method_not_supported_for_channel_type")
    _members_scope(call, channel)
    if channel.is_archived:
        raise ApiError("is_archived")
    if call.actor not in channel.members:
        raise ApiError("not_in_channel")
    topic = args.text("topic")
    if len(topic) > TOPIC_MAX:
        raise ApiError("too_long")
    with state.lock:
        channel.topic = TopicValue(value=topic, creator=call.actor, last_set=state.now())
        state.add_message(
            Message(
                ts=state.new_ts(),
                channel=channel.id,
                user=call.actor,
                text=f"set the channel topic: {topic}",
                subtype="channel_topic",
            )
        )
    return {"ok": True, "channel": _json(call, channel)}


def archive(call: Call) -> JsonObject:
    state = call.state
    channel = call.channel(call.args.required("channel", error="channel_not_found"))
    if channel.is_im:
        raise ApiError("method_not_supported_for_channel_type")
    _members_scope(call, channel)
    if channel.is_archived:
        raise ApiError("already_archived")
    if channel.is_general:
        raise ApiError("cant_archive_general")
    if call.actor not in channel.members:
        raise ApiError("not_in_channel")
    with state.lock:
        channel.is_archived = True
    state.touch()
    return {"ok": True}


def open_(call: Call) -> JsonObject:
    call.require_scope("im:write")
    users = [u for u in call.args.text("users").split(",") if u]
    if len(users) != 1:
        raise ApiError("not_enough_users" if not users else "too_many_users")
    if users[0] not in call.state.users:
        raise ApiError("user_not_found")
    channel = call.state.im_channel(users[0])
    return {"ok": True, "channel": {"id": channel.id}}
