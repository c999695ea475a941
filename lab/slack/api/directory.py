"""Who is who: auth.test, team.info, users.*, usergroups.*, and apps.connections.open."""

from __future__ import annotations

from agents.model import JsonObject
from lab.slack.api.context import Call, paginate
from lab.slack.config import TokenKind
from lab.slack.errors import ApiError
from lab.slack.wire import group_json, user_json


def auth_test(call: Call) -> JsonObject:
    state, cfg = call.state, call.state.config
    user = state.users[call.actor]
    body: JsonObject = {
        "ok": True,
        "url": f"{state.base_url}/",
        "team": cfg.team_name,
        "user": user.name,
        "team_id": cfg.team_id,
        "user_id": user.id,
        "is_enterprise_install": False,
    }
    if call.grant.kind is TokenKind.BOT:
        body["bot_id"] = cfg.bot_id
    return body


def team_info(call: Call) -> JsonObject:
    call.require_scope("team:read")
    cfg = call.state.config
    return {
        "ok": True,
        "team": {
            "id": cfg.team_id,
            "name": cfg.team_name,
            "domain": cfg.team_domain,
            "email_domain": "example.test",
            "url": f"{call.state.base_url}/",
            "is_verified": False,
            "icon": {"image_default": True},
        },
    }


def users_info(call: Call) -> JsonObject:
    call.require_scope("users:read")
    user = call.state.users.get(call.args.required("user", error="user_not_found"))
    if user is None:
        raise ApiError("user_not_found")
    return {"ok": True, "user": user_json(call.state, user)}


def users_list(call: Call) -> JsonObject:
    call.require_scope("users:read")
    everyone = list(call.state.users.values())
    page, cursor = paginate(everyone, call.args, default_limit=200, max_limit=1000)
    return {
        "ok": True,
        "members": [user_json(call.state, u) for u in page],
        "cache_ts": call.state.now(),
        "response_metadata": {"next_cursor": cursor},
    }


def usergroups_list(call: Call) -> JsonObject:
    call.require_scope("usergroups:read")
    include_users = call.args.flag("include_users")
    return {
        "ok": True,
        "usergroups": [
            group_json(call.state, g, include_users=include_users)
            for g in call.state.groups.values()
        ],
    }


def usergroups_users_list(call: Call) -> JsonObject:
    call.require_scope("usergroups:read")
    group = call.state.groups.get(call.args.required("usergroup", error="no_such_subteam"))
    if group is None:
        raise ApiError("no_such_subteam")
    return {"ok": True, "users": list(group.members)}


def connections_open(call: Call) -> JsonObject:
    call.require_scope("connections:write")
    state = call.state
    ticket = state.issue_socket_ticket()
    ws_base = state.base_url.replace("http://", "ws://", 1)
    return {"ok": True, "url": f"{ws_base}/link/?ticket={ticket}&app_id={state.config.app_id}"}
