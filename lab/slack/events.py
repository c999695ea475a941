"""Events API payloads: the inner events and the `event_callback` around them.

Which events an app receives depends on its subscriptions and on where the bot is: message
events only from conversations the bot is a member of, `app_mention` only when the text
mentions the bot user. These functions return `(subscription, event)` pairs; delivery drops
the ones the app did not subscribe to.
"""

from __future__ import annotations

import re

from agents.model import JsonObject
from lab.slack.records import Channel, Message, OutgoingEvent
from lab.slack.store import WorkspaceState
from lab.slack.wire import view_json


def _channel_type(channel: Channel) -> str:
    if channel.is_im:
        return "im"
    return "group" if channel.is_private else "channel"


def _message_subscription(channel: Channel) -> str:
    if channel.is_im:
        return "message.im"
    return "message.groups" if channel.is_private else "message.channels"


def message_events(state: WorkspaceState, message: Message) -> list[OutgoingEvent]:
    """The events a new message causes for the app (none if the bot cannot see it)."""
    channel = state.channels[message.channel]
    bot = state.config.bot_user_id
    if bot not in channel.members or message.ephemeral_to:
        return []
    event: JsonObject = {
        "type": "message",
        "channel": channel.id,
        "user": message.user,
        "text": message.text,
        "ts": message.ts,
        "event_ts": message.ts,
        "channel_type": _channel_type(channel),
        "team": state.config.team_id,
    }
    if message.blocks is not None:
        event["blocks"] = message.blocks
    if message.bot_id:
        event["bot_id"] = message.bot_id
        event["app_id"] = message.app_id
    if message.subtype:
        event["subtype"] = message.subtype
    if message.is_reply:
        event["thread_ts"] = message.thread_ts
        parent = state.message(channel.id, message.thread_ts)
        if parent is not None:
            event["parent_user_id"] = parent.user
    if message.file_ids:
        event["files"] = [{"id": f} for f in message.file_ids]
        event["upload"] = True
    events = [OutgoingEvent(subscription=_message_subscription(channel), event=event)]
    mentioned = re.search(rf"<@{re.escape(bot)}(\|[^>]*)?>", message.text) is not None
    if mentioned and not message.bot_id and not channel.is_im:
        mention: JsonObject = {
            "type": "app_mention",
            "user": message.user,
            "text": message.text,
            "ts": message.ts,
            "channel": channel.id,
            "event_ts": message.ts,
            "team": state.config.team_id,
        }
        if message.blocks is not None:
            mention["blocks"] = message.blocks
        if message.is_reply:
            mention["thread_ts"] = message.thread_ts
        events.append(OutgoingEvent(subscription="app_mention", event=mention))
    return events


def member_joined_event(
    state: WorkspaceState, channel: Channel, user: str, *, inviter: str = ""
) -> list[OutgoingEvent]:
    if state.config.bot_user_id not in channel.members:
        return []
    event: JsonObject = {
        "type": "member_joined_channel",
        "user": user,
        "channel": channel.id,
        "channel_type": "G" if channel.is_private else "C",
        "team": state.config.team_id,
        "event_ts": state.new_ts(),
    }
    if inviter:
        event["inviter"] = inviter
    return [OutgoingEvent(subscription="member_joined_channel", event=event)]


def app_home_opened_event(state: WorkspaceState, user: str) -> OutgoingEvent:
    channel = state.im_channel(user)
    event: JsonObject = {
        "type": "app_home_opened",
        "user": user,
        "channel": channel.id,
        "tab": "home",
        "event_ts": state.new_ts(),
    }
    view_id = state.home_views.get(user)
    if view_id is not None:
        event["view"] = view_json(state, state.views[view_id])
    return OutgoingEvent(subscription="app_home_opened", event=event)


def event_callback(state: WorkspaceState, event: JsonObject) -> JsonObject:
    cfg = state.config
    return {
        "token": cfg.verification_token,
        "team_id": cfg.team_id,
        "context_team_id": cfg.team_id,
        "context_enterprise_id": None,
        "api_app_id": cfg.app_id,
        "event": event,
        "type": "event_callback",
        "event_id": state.new_id("Ev"),
        "event_time": state.now(),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": cfg.team_id,
                "user_id": cfg.bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": f"4-{state.new_id('ctx')}",
    }
