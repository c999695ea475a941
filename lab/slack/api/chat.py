"""chat.*: post, update, delete messages; ephemeral messages; permalinks."""

from __future__ import annotations

from agents.model import JsonObject
from lab.slack.api.context import Call
from lab.slack.content import bot_message, content, thread_root
from lab.slack.errors import ApiError
from lab.slack.events import message_events
from lab.slack.records import Channel, Message
from lab.slack.store import SLACKBOT
from lab.slack.wire import message_json


def require_post_access(call: Call, channel: Channel) -> None:
    """Slack's rules for posting: archived channels refuse everyone; members may post; a bot
    with `chat:write.public` may post to public channels it is not in."""
    if channel.is_archived:
        raise ApiError("is_archived")
    if call.actor in channel.members:
        return
    if call.is_bot and not channel.is_private and "chat:write.public" in call.grant.scopes:
        return
    raise ApiError("not_in_channel")


def _new_message(call: Call, channel: Channel, *, ephemeral_to: str = "") -> Message:
    args, state = call.args, call.state
    text, blocks = content(
        state,
        text=args.text("text"),
        blocks=args.decoded("blocks", error="invalid_blocks_format"),
    )
    thread = thread_root(state, channel, args.text("thread_ts"))
    metadata = args.decoded("metadata", error="invalid_metadata_format")
    if call.is_bot:
        return bot_message(
            state,
            channel,
            text=text,
            blocks=blocks,
            thread_ts=thread,
            reply_broadcast=args.flag("reply_broadcast"),
            ephemeral_to=ephemeral_to,
            metadata=metadata,
        )
    message = Message(
        ts=state.new_ts(),
        channel=channel.id,
        user=call.actor,
        text=text,
        blocks=blocks,
        thread_ts=thread,
        subtype="thread_broadcast" if thread and args.flag("reply_broadcast") else "",
        ephemeral_to=ephemeral_to,
    )
    return state.add_message(message)


def post_message(call: Call) -> JsonObject:
    call.require_scope("chat:write")
    channel = call.channel(
        call.args.required("channel", error="channel_not_found"), allow_names=True
    )
    require_post_access(call, channel)
    message = _new_message(call, channel)
    if call.state.config.echo_bot_messages or not call.is_bot:
        call.events.extend(message_events(call.state, message))
    return {
        "ok": True,
        "channel": channel.id,
        "ts": message.ts,
        "message": message_json(call.state, message),
    }


def post_ephemeral(call: Call) -> JsonObject:
    call.require_scope("chat:write")
    args = call.args
    channel = call.channel(args.required("channel", error="channel_not_found"), allow_names=True)
    user = args.required("user", error="user_not_found")
    if user not in call.state.users:
        raise ApiError("user_not_found")
    require_post_access(call, channel)
    if user not in channel.members:
        raise ApiError("user_not_in_channel")
    message = _new_message(call, channel, ephemeral_to=user)
    return {"ok": True, "message_ts": message.ts}


def _own_message(call: Call, *, error: str) -> tuple[Channel, Message]:
    args = call.args
    channel = call.channel(args.required("channel", error="channel_not_found"))
    ts = args.required("ts", error="message_not_found")
    message = call.state.message(channel.id, ts)
    if message is None or message.subtype == "tombstone":
        raise ApiError("message_not_found")
    own = message.bot_id == call.state.config.bot_id if call.is_bot else message.user == call.actor
    if not own or (call.is_bot and not message.bot_id):
        raise ApiError(error)
    return channel, message


def update(call: Call) -> JsonObject:
    call.require_scope("chat:write")
    args, state = call.args, call.state
    channel, message = _own_message(call, error="cant_update_message")
    raw_blocks = args.decoded("blocks", error="invalid_blocks_format")
    text = args.text("text") if args.has("text") else message.text
    blocks = message.blocks if raw_blocks is None else raw_blocks
    text, new_blocks = content(state, text=text, blocks=blocks)
    with state.lock:
        message.text = text
        message.blocks = new_blocks if new_blocks else None
        message.edited = {"user": call.actor, "ts": state.new_ts()}
        if args.has("metadata"):
            message.metadata = args.decoded("metadata", error="invalid_metadata_format")
    state.touch()
    return {
        "ok": True,
        "channel": channel.id,
        "ts": message.ts,
        "text": message.text,
        "message": message_json(state, message),
    }


def delete(call: Call) -> JsonObject:
    call.require_scope("chat:write")
    state = call.state
    channel, message = _own_message(call, error="cant_delete_message")
    if message.reply_ts:
        # A parent with replies stays as a tombstone so the thread survives, as in Slack.
        with state.lock:
            message.text = "This message was deleted."
            message.blocks = None
            message.subtype = "tombstone"
            message.user = SLACKBOT
            message.bot_id = ""
        state.touch()
    else:
        state.remove_message(message)
    return {"ok": True, "channel": channel.id, "ts": message.ts}


def get_permalink(call: Call) -> JsonObject:
    args, state = call.args, call.state
    channel = call.channel(args.required("channel", error="channel_not_found"))
    ts = args.required("message_ts", error="message_not_found")
    message = state.message(channel.id, ts)
    if message is None:
        raise ApiError("message_not_found")
    return {"ok": True, "channel": channel.id, "permalink": permalink(call, message)}


def permalink(call: Call, message: Message) -> str:
    link = f"{call.state.base_url}/archives/{message.channel}/p{message.ts.replace('.', '')}"
    if message.is_reply:
        link += f"?thread_ts={message.thread_ts}&cid={message.channel}"
    return link
