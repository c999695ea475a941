"""What the page shows one user: the workspace as that user sees it.

Private channels the user is not in, other people's ephemeral messages and other people's
modals never leave the server; the page renders whatever this returns. Messages come in
Slack's own JSON, so the page renders exactly what the app sent.
"""

from __future__ import annotations

from agents.model import JsonObject
from lab.slack.records import Channel, User
from lab.slack.store import SLACKBOT, WorkspaceState
from lab.slack.wire import message_json, view_json

#: Top-level messages sent per channel; older ones stay in the store.
MAX_MESSAGES = 300


def _visible(channel: Channel, user_id: str) -> bool:
    if channel.is_im:
        return channel.im_user == user_id
    return not channel.is_private or user_id in channel.members


def _person(user: User) -> JsonObject:
    return {
        "id": user.id,
        "name": user.name,
        "real_name": user.real_name,
        "title": user.title,
        "is_admin": user.is_admin,
        "is_bot": user.is_bot,
    }


def snapshot(
    state: WorkspaceState,
    *,
    user_id: str,
    channel_id: str,
    transport: str,
    connected: int,
) -> JsonObject:
    cfg = state.config
    with state.lock:
        people = [u for u in state.users.values() if u.id != SLACKBOT]
        named = state.users.get(user_id) or state.user_by_name(user_id)
        if named is None or named.is_bot or named.id == SLACKBOT:
            user_id = next((u.id for u in people if not u.is_bot), "")
        else:
            user_id = named.id
        direct: JsonObject | None = None
        if user_id:
            dm = state.im_channel(user_id)  # the app's DM, where its Messages tab lives
            sent = [m for m in state.messages[dm.id].values() if m.bot_id]
            direct = {
                "id": dm.id,
                "count": len(sent),
                "latest": sent[-1].text if sent else "",
            }
        channels = [c for c in state.channels.values() if _visible(c, user_id)]
        current = state.find_channel(channel_id, allow_names=True) if channel_id else None
        if current is None or not _visible(current, user_id):
            current = channels[0] if channels else None
        body: JsonObject = {
            "version": state.version,
            "team": {"id": cfg.team_id, "name": cfg.team_name, "domain": cfg.team_domain},
            "app": {"id": cfg.app_id, "name": cfg.app_name, "bot_user_id": cfg.bot_user_id},
            "me": user_id,
            "users": [_person(u) for u in state.users.values()],
            "groups": [
                {"id": g.id, "handle": g.handle, "name": g.name, "members": list(g.members)}
                for g in state.groups.values()
            ],
            "channels": [
                {
                    "id": c.id,
                    "name": c.name,
                    "is_private": c.is_private,
                    "is_im": c.is_im,
                    "is_archived": c.is_archived,
                    "is_member": user_id in c.members,
                    "message_count": len(state.messages[c.id]),
                }
                for c in channels
            ],
            "commands": list(cfg.commands),
            "transport": transport,
            "clock_note": cfg.clock_note,
            "connected": connected,
            "notices": list(state.notices.get(user_id, [])),
            "direct": direct,
            "channel": _channel(state, current, user_id) if current is not None else None,
            "modal": _modal(state, user_id),
            "home": _home(state, user_id),
        }
    return body


def _channel(state: WorkspaceState, channel: Channel, user_id: str) -> JsonObject:
    messages = list(state.messages[channel.id].values())
    top = [m for m in messages if not m.is_reply or m.subtype == "thread_broadcast"]
    keep = {m.ts for m in top[-MAX_MESSAGES:]}
    shown = [m for m in messages if m.ts in keep or (m.is_reply and m.thread_ts in keep)]
    items = [message_json(state, m) for m in shown]
    for message in state.ephemerals[channel.id].values():
        if message.ephemeral_to == user_id:
            item = message_json(state, message)
            item["is_ephemeral"] = True
            items.append(item)
    items.sort(key=lambda m: float(m["ts"]))
    return {
        "id": channel.id,
        "name": channel.name,
        "is_private": channel.is_private,
        "is_im": channel.is_im,
        "is_member": user_id in channel.members,
        "is_archived": channel.is_archived,
        "topic": channel.topic.value,
        "members": sorted(channel.members),
        "pins": [pin.ts for pin in channel.pins],
        "messages": items,
    }


def _modal(state: WorkspaceState, user_id: str) -> JsonObject | None:
    stack = state.modal_stacks.get(user_id, [])
    if not stack:
        return None
    view = state.views[stack[-1]]
    body = view_json(state, view)
    body["errors"] = dict(view.errors)
    body["depth"] = len(stack)
    return body


def _home(state: WorkspaceState, user_id: str) -> JsonObject | None:
    view_id = state.home_views.get(user_id)
    return view_json(state, state.views[view_id]) if view_id else None
