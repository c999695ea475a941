"""Records as Slack's JSON: the shapes `slack_sdk`, Bolt and the page read.

Every function returns a fresh structure (deep-copied where records hold JSON), so what leaves
the store can be mutated freely. Callers hold the store's lock.
"""

from __future__ import annotations

import copy
from typing import Any

from agents.model import JsonObject
from lab.slack.records import Channel, File, Message, User, UserGroup, View
from lab.slack.store import WorkspaceState


def user_json(state: WorkspaceState, user: User) -> JsonObject:
    team_id = state.config.team_id
    profile: JsonObject = {
        "real_name": user.real_name,
        "real_name_normalized": user.real_name,
        "display_name": user.name,
        "display_name_normalized": user.name,
        "title": user.title,
        "email": user.email,
        "team": team_id,
        "image_48": "",
    }
    if user.is_bot:
        profile["bot_id"] = user.bot_id
        profile["api_app_id"] = state.config.app_id
    return {
        "id": user.id,
        "team_id": team_id,
        "name": user.name,
        "real_name": user.real_name,
        "deleted": False,
        "is_admin": user.is_admin,
        "is_owner": user.is_owner,
        "is_primary_owner": False,
        "is_restricted": False,
        "is_ultra_restricted": False,
        "is_bot": user.is_bot,
        "is_app_user": False,
        "tz": user.tz,
        "tz_label": user.tz,
        "tz_offset": 0,
        "updated": 0,
        "profile": profile,
    }


def user_ref_json(state: WorkspaceState, user: User) -> JsonObject:
    """The short user object interaction payloads carry."""
    return {
        "id": user.id,
        "username": user.name,
        "name": user.name,
        "team_id": state.config.team_id,
    }


def group_json(state: WorkspaceState, group: UserGroup, *, include_users: bool) -> JsonObject:
    body: JsonObject = {
        "id": group.id,
        "team_id": state.config.team_id,
        "is_usergroup": True,
        "is_subteam": True,
        "name": group.name,
        "description": group.description,
        "handle": group.handle,
        "is_external": False,
        "date_create": group.created,
        "date_update": group.created,
        "date_delete": 0,
        "auto_type": None,
        "created_by": "",
        "updated_by": "",
        "deleted_by": None,
        "prefs": {"channels": [], "groups": []},
        "user_count": len(group.members),
    }
    if include_users:
        body["users"] = list(group.members)
    return body


def channel_json(state: WorkspaceState, channel: Channel, *, viewer: str) -> JsonObject:
    def topic(value: Any) -> JsonObject:
        return {"value": value.value, "creator": value.creator, "last_set": value.last_set}

    body: JsonObject = {
        "id": channel.id,
        "created": channel.created,
        "creator": channel.creator,
        "is_archived": channel.is_archived,
        "is_org_shared": False,
        "is_shared": False,
        "is_ext_shared": False,
        "context_team_id": state.config.team_id,
        "updated": channel.created * 1000,
    }
    if channel.is_im:
        body.update(is_im=True, is_channel=False, is_group=False, user=channel.im_user)
        return body
    body.update(
        name=channel.name,
        name_normalized=channel.name,
        is_channel=not channel.is_private,
        is_group=channel.is_private,
        is_im=False,
        is_mpim=False,
        is_private=channel.is_private,
        is_general=channel.is_general,
        is_member=viewer in channel.members,
        num_members=len(channel.members),
        topic=topic(channel.topic),
        purpose=topic(channel.purpose),
        previous_names=[],
        unlinked=0,
        is_pending_ext_shared=False,
        pending_shared=[],
    )
    return body


def file_json(state: WorkspaceState, file: File) -> JsonObject:
    base = state.base_url
    team_id = state.config.team_id
    url = f"{base}/files-pri/{team_id}-{file.id}/{file.name}"
    body: JsonObject = {
        "id": file.id,
        "created": file.created,
        "timestamp": file.created,
        "name": file.name,
        "title": file.title,
        "mimetype": file.mimetype,
        "filetype": file.filetype,
        "pretty_type": file.filetype.upper(),
        "user": file.user,
        "user_team": team_id,
        "editable": False,
        "size": len(file.data) if file.data is not None else file.length,
        "mode": "hosted",
        "is_external": False,
        "external_type": "",
        "is_public": True,
        "public_url_shared": False,
        "display_as_bot": False,
        "username": "",
        "url_private": url,
        "url_private_download": f"{url}?download=1",
        "permalink": f"{base}/files/{file.user}/{file.id}/{file.name}",
        "channels": [c for c in file.shares if not state.channels[c].is_private],
        "groups": [c for c in file.shares if state.channels[c].is_private],
        "ims": [],
        "comments_count": 0,
        "shares": {
            "public": {
                channel: [{"ts": ts, "channel_name": state.channels[channel].name} for ts in tss]
                for channel, tss in file.shares.items()
                if not state.channels[channel].is_private
            }
        },
    }
    if file.alt_txt:
        body["alt_txt"] = file.alt_txt
    if file.mimetype.startswith("image/"):
        body["thumb_360"] = url
        body["original_w"] = 0
        body["original_h"] = 0
    return body


def message_json(state: WorkspaceState, message: Message) -> JsonObject:
    cfg = state.config
    body: JsonObject = {
        "type": "message",
        "ts": message.ts,
        "user": message.user,
        "text": message.text,
        "team": cfg.team_id,
    }
    if message.subtype:
        body["subtype"] = message.subtype
    if message.blocks is not None:
        body["blocks"] = copy.deepcopy(message.blocks)
    if message.bot_id:
        body["bot_id"] = message.bot_id
        body["app_id"] = message.app_id
        body["bot_profile"] = {
            "id": message.bot_id,
            "app_id": message.app_id,
            "name": cfg.app_name,
            "deleted": False,
            "team_id": cfg.team_id,
            "icons": {},
            "updated": 0,
        }
    if message.thread_ts:
        body["thread_ts"] = message.thread_ts
    if message.is_reply:
        parent = state.message(message.channel, message.thread_ts)
        if parent is not None:
            body["parent_user_id"] = parent.user
    elif message.reply_ts:
        replies = [state.messages[message.channel][ts] for ts in message.reply_ts]
        users = list(dict.fromkeys(r.user for r in replies))
        body.update(
            reply_count=len(replies),
            reply_users_count=len(users),
            reply_users=users,
            latest_reply=message.reply_ts[-1],
            subscribed=False,
        )
    if message.file_ids:
        body["files"] = [file_json(state, state.files[f]) for f in message.file_ids]
        body["upload"] = True
        body["display_as_bot"] = False
    if message.reactions:
        body["reactions"] = [
            {"name": name, "users": list(users), "count": len(users)}
            for name, users in message.reactions.items()
        ]
    if message.edited is not None:
        body["edited"] = dict(message.edited)
    if message.metadata is not None:
        body["metadata"] = copy.deepcopy(message.metadata)
    channel = state.channels[message.channel]
    if any(pin.ts == message.ts for pin in channel.pins):
        body["pinned_to"] = [channel.id]
    return body


def view_json(state: WorkspaceState, view: View) -> JsonObject:
    cfg = state.config
    body: JsonObject = {
        "id": view.id,
        "team_id": cfg.team_id,
        "type": view.type.value,
        "blocks": copy.deepcopy(view.blocks),
        "private_metadata": view.private_metadata,
        "callback_id": view.callback_id,
        "state": {"values": copy.deepcopy(view.values)},
        "hash": view.hash,
        "title": copy.deepcopy(view.title),
        "clear_on_close": view.clear_on_close,
        "notify_on_close": view.notify_on_close,
        "close": copy.deepcopy(view.close),
        "submit": copy.deepcopy(view.submit),
        "previous_view_id": view.previous_view_id,
        "root_view_id": view.root_view_id or view.id,
        "app_id": cfg.app_id,
        "external_id": view.external_id,
        "app_installed_team_id": cfg.team_id,
        "bot_id": cfg.bot_id,
    }
    return body
