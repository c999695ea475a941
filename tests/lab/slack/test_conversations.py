"""conversations.*, pins, reactions and the directory (users, groups, team, auth)."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lab.slack import ChannelSpec, Delivery, EnvelopeKind, SlackWorkspace, WorkspaceConfig


def error_of(call: Callable[[], Any]) -> str:
    with pytest.raises(SlackApiError) as caught:
        call()
    return str(caught.value.response["error"])


def test_create_follows_slacks_name_rules(workspace: SlackWorkspace, client: WebClient) -> None:
    created = client.conversations_create(name="inc-2026-11-30-hotel-5xx")["channel"]
    assert created["name"] == "inc-2026-11-30-hotel-5xx"
    assert created["is_member"] and created["is_channel"] and not created["is_private"]
    assert created["creator"] == workspace.config.bot_user_id
    assert client.conversations_create(name="x" * 80)["ok"]
    assert error_of(lambda: client.conversations_create(name="x" * 81)) == "invalid_name_maxlength"
    assert (
        error_of(lambda: client.conversations_create(name="Inc-Upper")) == "invalid_name_specials"
    )
    assert (
        error_of(lambda: client.conversations_create(name="has space")) == "invalid_name_specials"
    )
    assert error_of(lambda: client.conversations_create(name="---")) == "invalid_name_punctuation"
    assert error_of(lambda: client.conversations_create(name="")) == "invalid_name_required"
    assert error_of(lambda: client.conversations_create(name="incidents")) == "name_taken"
    private = client.conversations_create(name="war-room", is_private=True)["channel"]
    assert private["is_private"] and private["is_group"]
    assert error_of(lambda: client.conversations_create(name="war-room")) == "name_taken"


def test_invite_adds_members_and_tells_the_app(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    channel = client.conversations_create(name="inc-1")["channel"]["id"]
    invited = client.conversations_invite(channel=channel, users="U0ALICE01,U0BOB0002")
    assert invited["channel"]["num_members"] == 3
    assert workspace.channel(channel)["num_members"] == 3

    def joined() -> list[Delivery] | None:
        found = [
            d
            for d in workspace.deliveries(EnvelopeKind.EVENTS_API)
            if d.event_type == "member_joined_channel"
        ]
        return found if len(found) >= 2 else None

    events = workspace.wait_until(joined)
    assert {d.payload["event"]["user"] for d in events} == {"U0ALICE01", "U0BOB0002"}
    assert all(d.payload["event"]["inviter"] == workspace.config.bot_user_id for d in events)
    assert error_of(lambda: client.conversations_invite(channel=channel, users="U0ALICE01")) == (
        "already_in_channel"
    )
    assert error_of(lambda: client.conversations_invite(channel=channel, users="U0NOBODY")) == (
        "user_not_found"
    )
    bot = workspace.config.bot_user_id
    assert error_of(lambda: client.conversations_invite(channel=channel, users=bot)) == (
        "cant_invite_self"
    )
    assert error_of(lambda: client.conversations_invite(channel=channel, users="")) == "no_user"


def test_join_and_membership_rules() -> None:
    config = WorkspaceConfig(
        channels=(
            ChannelSpec(name="general", members=("*",)),
            ChannelSpec(name="quiet", members=("alice",), bot_member=False),
            ChannelSpec(name="ops", members=("alice",), is_private=True),
        )
    )
    with SlackWorkspace(config) as ws:
        client = WebClient(base_url=ws.api_url, token=ws.config.bot_token)
        quiet = ws.channel("quiet")["id"]
        assert error_of(lambda: client.conversations_history(channel=quiet)) == "not_in_channel"
        assert error_of(lambda: client.conversations_invite(channel=quiet, users="U0BOB0002")) == (
            "not_in_channel"
        )
        joined = client.conversations_join(channel=quiet)
        assert joined["channel"]["is_member"]
        again = client.conversations_join(channel=quiet)
        assert again["warning"] == "already_in_channel"
        ops = ws.channel("ops")["id"]
        assert error_of(lambda: client.conversations_join(channel=ops)) == (
            "method_not_supported_for_channel_type"
        )
        assert (
            error_of(lambda: client.conversations_join(channel="C0MISSING")) == "channel_not_found"
        )


def test_info_and_list(workspace: SlackWorkspace, client: WebClient) -> None:
    secret = client.conversations_create(name="secret", is_private=True)["channel"]["id"]
    info = client.conversations_info(channel=secret)["channel"]
    assert info["name"] == "secret" and info["is_private"]
    public = client.conversations_list()["channels"]
    assert {c["name"] for c in public} == {"general", "incidents"}
    both = client.conversations_list(types="public_channel,private_channel")["channels"]
    assert {c["name"] for c in both} == {"general", "incidents", "secret"}
    assert error_of(lambda: client.conversations_info(channel="C0MISSING")) == "channel_not_found"


def test_list_paginates_with_cursors(client: WebClient) -> None:
    for i in range(5):
        client.conversations_create(name=f"page-{i}")
    names: list[str] = []
    pages = 0
    for page in client.conversations_list(limit=2):
        names.extend(c["name"] for c in page["channels"])
        pages += 1
    assert pages == 4
    assert len(names) == 7 == len(set(names))
    assert error_of(lambda: client.conversations_list(cursor="bm9wZQ==")) == "invalid_cursor"


def test_history_window_and_pagination(workspace: SlackWorkspace, client: WebClient) -> None:
    stamps = [client.chat_postMessage(channel="incidents", text=str(i))["ts"] for i in range(5)]
    channel = workspace.channel("incidents")["id"]
    first = client.conversations_history(channel=channel, limit=2)
    assert [m["text"] for m in first["messages"]] == ["4", "3"]
    assert first["has_more"]
    second = client.conversations_history(
        channel=channel, limit=2, cursor=first["response_metadata"]["next_cursor"]
    )
    assert [m["text"] for m in second["messages"]] == ["2", "1"]
    window = client.conversations_history(channel=channel, oldest=stamps[1], latest=stamps[3])
    assert [m["text"] for m in window["messages"]] == ["2"]
    inclusive = client.conversations_history(
        channel=channel, oldest=stamps[1], latest=stamps[3], inclusive=True
    )
    assert [m["text"] for m in inclusive["messages"]] == ["3", "2", "1"]
    assert error_of(lambda: client.conversations_history(channel=channel, latest="soon")) == (
        "invalid_ts_latest"
    )


def test_rename(workspace: SlackWorkspace, client: WebClient) -> None:
    channel = client.conversations_create(name="inc-20260105-frontend-3f2a")["channel"]["id"]
    renamed = client.conversations_rename(channel=channel, name="inc-20260105-geo-3f2a")
    assert renamed["channel"]["name"] == "inc-20260105-geo-3f2a"
    assert workspace.channel(channel)["name"] == "inc-20260105-geo-3f2a"
    assert workspace.channel_by_name("inc-20260105-frontend-3f2a") is None
    assert workspace.messages(channel)[-1]["subtype"] == "channel_name"
    assert client.conversations_rename(channel=channel, name="inc-20260105-geo-3f2a")["ok"]
    rename = client.conversations_rename
    assert error_of(lambda: rename(channel=channel, name="incidents")) == "name_taken"
    assert error_of(lambda: rename(channel=channel, name="Has Caps")) == "invalid_name_specials"


def test_set_topic(workspace: SlackWorkspace, client: WebClient) -> None:
    channel = workspace.channel("incidents")["id"]
    result = client.conversations_setTopic(channel=channel, topic="INC-7 · awaiting approval")
    assert result["channel"]["topic"]["value"] == "INC-7 · awaiting approval"
    assert workspace.channel("incidents")["topic"]["creator"] == workspace.config.bot_user_id
    assert workspace.messages("incidents")[-1]["subtype"] == "channel_topic"
    assert error_of(lambda: client.conversations_setTopic(channel=channel, topic="x" * 251)) == (
        "too_long"
    )


def test_archive(workspace: SlackWorkspace, client: WebClient) -> None:
    channel = client.conversations_create(name="inc-old")["channel"]["id"]
    assert client.conversations_archive(channel=channel)["ok"]
    assert workspace.channel(channel)["is_archived"]
    assert error_of(lambda: client.chat_postMessage(channel=channel, text="x")) == "is_archived"
    assert error_of(lambda: client.conversations_archive(channel=channel)) == "already_archived"


def test_pins(workspace: SlackWorkspace, client: WebClient) -> None:
    summary = client.chat_postMessage(channel="incidents", text="summary")
    channel = summary["channel"]
    client.pins_add(channel=channel, timestamp=summary["ts"])
    assert [m["text"] for m in workspace.pins("incidents")] == ["summary"]
    listed = client.pins_list(channel=channel)["items"]
    assert listed[0]["type"] == "message"
    assert listed[0]["message"]["pinned_to"] == [channel]
    assert listed[0]["created_by"] == workspace.config.bot_user_id
    assert error_of(lambda: client.pins_add(channel=channel, timestamp=summary["ts"])) == (
        "already_pinned"
    )
    assert error_of(lambda: client.pins_add(channel=channel, timestamp="1.000001")) == (
        "message_not_found"
    )
    client.pins_remove(channel=channel, timestamp=summary["ts"])
    assert workspace.pins("incidents") == []
    assert (
        error_of(lambda: client.pins_remove(channel=channel, timestamp=summary["ts"])) == "no_pin"
    )


def test_reactions(workspace: SlackWorkspace, client: WebClient) -> None:
    posted = client.chat_postMessage(channel="incidents", text="done")
    client.reactions_add(channel=posted["channel"], timestamp=posted["ts"], name="white_check_mark")
    stored = workspace.message("incidents", posted["ts"])
    assert stored is not None
    assert stored["reactions"] == [
        {"name": "white_check_mark", "users": [workspace.config.bot_user_id], "count": 1}
    ]
    assert (
        error_of(
            lambda: client.reactions_add(
                channel=posted["channel"], timestamp=posted["ts"], name="white_check_mark"
            )
        )
        == "already_reacted"
    )
    assert (
        error_of(
            lambda: client.reactions_add(
                channel=posted["channel"], timestamp=posted["ts"], name="no way"
            )
        )
        == "invalid_name"
    )


def test_users_groups_and_team(workspace: SlackWorkspace, client: WebClient) -> None:
    dana = client.users_info(user="U0DANA004")["user"]
    assert dana["is_admin"] and dana["real_name"] == "Dana Admin"
    assert not client.users_info(user="U0CAROL03")["user"]["is_admin"]
    members = {u["name"] for u in client.users_list()["members"]}
    assert {"alice", "bob", "carol", "dana", "stratus"} <= members
    assert error_of(lambda: client.users_info(user="U0NOBODY")) == "user_not_found"
    groups = client.usergroups_list(include_users=True)["usergroups"]
    approvers = next(g for g in groups if g["handle"] == "sre-approvers")
    assert approvers["users"] == ["U0ALICE01", "U0BOB0002"]
    assert client.usergroups_users_list(usergroup=approvers["id"])["users"] == [
        "U0ALICE01",
        "U0BOB0002",
    ]
    assert error_of(lambda: client.usergroups_users_list(usergroup="S0NONE")) == "no_such_subteam"
    team = client.team_info()["team"]
    assert (team["id"], team["domain"]) == ("T0LAB0001", "stratus-lab")


def test_authentication_errors(workspace: SlackWorkspace, client: WebClient) -> None:
    assert error_of(lambda: client.api_call("chat.fly")) == "unknown_method"
    stranger = WebClient(base_url=workspace.api_url, token="xoxb-not-a-token")
    assert error_of(stranger.auth_test) == "invalid_auth"
    anonymous = WebClient(base_url=workspace.api_url)
    assert error_of(anonymous.auth_test) == "not_authed"
    app_level = WebClient(base_url=workspace.api_url, token=workspace.config.app_token)
    assert error_of(lambda: app_level.chat_postMessage(channel="general", text="x")) == (
        "not_allowed_token_type"
    )
    assert error_of(lambda: client.apps_connections_open(app_token=workspace.config.bot_token)) == (
        "not_allowed_token_type"
    )


def test_connections_open_returns_a_loopback_websocket_url(workspace: SlackWorkspace) -> None:
    app_level = WebClient(base_url=workspace.api_url)
    url = app_level.apps_connections_open(app_token=workspace.config.app_token)["url"]
    assert url.startswith(f"ws://127.0.0.1:{workspace.url.rsplit(':', 1)[1]}/link/?ticket=")


def test_token_in_a_form_field_or_a_bearer_header(workspace: SlackWorkspace) -> None:
    form = urllib.parse.urlencode(
        {"token": workspace.config.bot_token, "channel": "general", "text": "form"}
    )
    with urllib.request.urlopen(
        f"{workspace.api_url}chat.postMessage", data=form.encode()
    ) as answer:
        assert json.loads(answer.read())["ok"]
    request = urllib.request.Request(
        f"{workspace.api_url}chat.postMessage",
        data=json.dumps({"channel": "general", "text": "json"}).encode(),
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "Authorization": f"Bearer {workspace.config.bot_token}",
        },
    )
    with urllib.request.urlopen(request) as answer:
        assert json.loads(answer.read())["ok"]
    assert [m["text"] for m in workspace.messages("general")] == ["form", "json"]
