"""chat.* through the real WebClient: shapes, threads, ephemeral messages, Slack's errors."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lab.slack import ChannelSpec, SlackWorkspace, TokenSpec, WorkspaceConfig


def error_of(call: Callable[[], Any]) -> str:
    with pytest.raises(SlackApiError) as caught:
        call()
    return str(caught.value.response["error"])


def test_post_message_by_name_and_id_returns_slacks_shape(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    channel_id = workspace.channel("incidents")["id"]
    by_name = client.chat_postMessage(channel="incidents", text="one")
    by_hash = client.chat_postMessage(channel="#incidents", text="two")
    by_id = client.chat_postMessage(channel=channel_id, text="three")
    assert {by_name["channel"], by_hash["channel"], by_id["channel"]} == {channel_id}
    message = by_id["message"]
    assert message["user"] == workspace.config.bot_user_id
    assert message["bot_id"] == workspace.config.bot_id
    assert message["text"] == "three"
    assert [m["text"] for m in workspace.messages("incidents")] == ["one", "two", "three"]


def test_timestamps_are_slack_format_unique_and_increasing(client: WebClient) -> None:
    stamps = [client.chat_postMessage(channel="general", text=str(i))["ts"] for i in range(30)]
    assert all(len(ts.split(".")[1]) == 6 for ts in stamps)
    assert stamps == sorted(stamps, key=float)
    assert len(set(stamps)) == len(stamps)


def test_json_body_is_accepted(workspace: SlackWorkspace, client: WebClient) -> None:
    response = client.api_call(
        "chat.postMessage",
        json={"channel": "incidents", "text": "json", "blocks": [{"type": "divider"}]},
    )
    assert response["ok"]
    assert workspace.messages("incidents")[-1]["blocks"][0]["type"] == "divider"


def test_blocks_get_block_ids_like_slack(workspace: SlackWorkspace, client: WebClient) -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "*plan*"}},
        {
            "type": "actions",
            "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Go"}}],
        },
    ]
    stored = client.chat_postMessage(channel="incidents", text="t", blocks=blocks)["message"][
        "blocks"
    ]
    assert all(block["block_id"] for block in stored)
    assert stored[1]["elements"][0]["action_id"]


def test_post_errors(workspace: SlackWorkspace, client: WebClient) -> None:
    assert (
        error_of(lambda: client.chat_postMessage(channel="nowhere", text="x"))
        == "channel_not_found"
    )
    # (api_call: the SDK's own method warns before sending a message without text)
    no_text = {"channel": "incidents"}
    assert error_of(lambda: client.api_call("chat.postMessage", params=no_text)) == "no_text"
    assert error_of(lambda: client.chat_postMessage(channel="incidents", text="x" * 40_001)) == (
        "msg_too_long"
    )


def test_bot_outside_a_channel() -> None:
    config = WorkspaceConfig(
        channels=(
            ChannelSpec(name="general", members=("*",)),
            ChannelSpec(name="quiet", members=("*",), bot_member=False),
            ChannelSpec(name="secret", members=("alice",), bot_member=False, is_private=True),
        ),
        extra_tokens=(TokenSpec(token="xoxb-public", scopes=("chat:write", "chat:write.public")),),
    )
    with SlackWorkspace(config) as ws:
        client = WebClient(base_url=ws.api_url, token=ws.config.bot_token)
        assert (
            error_of(lambda: client.chat_postMessage(channel="quiet", text="x")) == "not_in_channel"
        )
        # A private channel the bot is not in does not exist for it.
        assert error_of(lambda: client.chat_postMessage(channel="secret", text="x")) == (
            "channel_not_found"
        )
        public = WebClient(base_url=ws.api_url, token="xoxb-public")
        assert public.chat_postMessage(channel="quiet", text="with chat:write.public")["ok"]
        assert error_of(lambda: public.chat_postMessage(channel="secret", text="x")) == (
            "channel_not_found"
        )


def test_threads_and_broadcast_replies(workspace: SlackWorkspace, client: WebClient) -> None:
    parent = client.chat_postMessage(channel="incidents", text="parent")
    reply = client.chat_postMessage(channel="incidents", text="r1", thread_ts=parent["ts"])
    # A reply to a reply joins the same thread, as in Slack.
    nested = client.chat_postMessage(channel="incidents", text="r2", thread_ts=reply["ts"])
    loud = client.chat_postMessage(
        channel="incidents", text="r3", thread_ts=parent["ts"], reply_broadcast=True
    )
    assert nested["message"]["thread_ts"] == parent["ts"]
    history = client.conversations_history(channel=parent["channel"])["messages"]
    assert [m["text"] for m in history] == ["r3", "parent"]
    assert history[0]["subtype"] == "thread_broadcast"
    assert history[1]["reply_count"] == 3
    assert history[1]["latest_reply"] == loud["ts"]
    replies = client.conversations_replies(channel=parent["channel"], ts=reply["ts"])["messages"]
    assert [m["text"] for m in replies] == ["parent", "r1", "r2", "r3"]
    assert replies[1]["parent_user_id"] == workspace.config.bot_user_id
    assert [m["text"] for m in workspace.messages("incidents", thread_ts=parent["ts"])] == [
        "parent",
        "r1",
        "r2",
        "r3",
    ]
    bogus = "1.000001"
    assert error_of(
        lambda: client.chat_postMessage(channel="incidents", text="x", thread_ts=bogus)
    ) == ("thread_not_found")
    assert error_of(lambda: client.conversations_replies(channel=parent["channel"], ts=bogus)) == (
        "thread_not_found"
    )


def test_update_replaces_content_and_keeps_blocks_unless_given(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    blocks = [{"type": "section", "text": {"type": "plain_text", "text": "v1"}}]
    posted = client.chat_postMessage(channel="incidents", text="v1", blocks=blocks)
    updated = client.chat_update(channel=posted["channel"], ts=posted["ts"], text="v2")
    assert updated["text"] == "v2"
    stored = workspace.message("incidents", posted["ts"])
    assert stored is not None
    assert stored["text"] == "v2"
    assert stored["blocks"][0]["text"]["text"] == "v1"
    assert stored["edited"]["user"] == workspace.config.bot_user_id
    client.chat_update(channel=posted["channel"], ts=posted["ts"], text="v3", blocks=[])
    stored = workspace.message("incidents", posted["ts"])
    assert stored is not None
    assert "blocks" not in stored


def test_update_and_delete_errors(workspace: SlackWorkspace, client: WebClient) -> None:
    channel = workspace.channel("incidents")["id"]
    user_ts = workspace.post_as_user("alice", "incidents", "mine")
    assert error_of(lambda: client.chat_update(channel=channel, ts="1.000001", text="x")) == (
        "message_not_found"
    )
    assert error_of(lambda: client.chat_update(channel=channel, ts=user_ts, text="x")) == (
        "cant_update_message"
    )
    assert (
        error_of(lambda: client.chat_delete(channel=channel, ts=user_ts)) == "cant_delete_message"
    )


def test_delete_removes_or_leaves_a_tombstone(workspace: SlackWorkspace, client: WebClient) -> None:
    lone = client.chat_postMessage(channel="incidents", text="lone")
    parent = client.chat_postMessage(channel="incidents", text="parent")
    client.chat_postMessage(channel="incidents", text="reply", thread_ts=parent["ts"])
    client.chat_delete(channel=lone["channel"], ts=lone["ts"])
    client.chat_delete(channel=parent["channel"], ts=parent["ts"])
    remaining = workspace.messages("incidents")
    assert [m["ts"] for m in remaining] == [parent["ts"]]
    assert remaining[0]["subtype"] == "tombstone"
    assert len(workspace.messages("incidents", thread_ts=parent["ts"])) == 2


def test_ephemeral_messages_are_for_one_user_and_not_in_history(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    response = client.chat_postEphemeral(channel="incidents", user="U0BOB0002", text="psst")
    assert response["message_ts"]
    assert [m["text"] for m in workspace.ephemerals("incidents", "bob")] == ["psst"]
    assert workspace.ephemerals("incidents", "alice") == []
    channel = workspace.channel("incidents")["id"]
    assert client.conversations_history(channel=channel)["messages"] == []
    assert (
        error_of(lambda: client.chat_postEphemeral(channel="incidents", user="U0NOBODY", text="x"))
        == "user_not_found"
    )


def test_ephemeral_to_someone_outside_the_channel(client: WebClient) -> None:
    created = client.conversations_create(name="small")["channel"]["id"]
    assert (
        error_of(lambda: client.chat_postEphemeral(channel=created, user="U0BOB0002", text="x"))
        == "user_not_in_channel"
    )


def test_permalink_points_at_the_page(workspace: SlackWorkspace, client: WebClient) -> None:
    posted = client.chat_postMessage(channel="incidents", text="link me")
    reply = client.chat_postMessage(channel="incidents", text="reply", thread_ts=posted["ts"])
    link = client.chat_getPermalink(channel=posted["channel"], message_ts=posted["ts"])["permalink"]
    assert link == f"{workspace.url}/archives/{posted['channel']}/p{posted['ts'].replace('.', '')}"
    reply_link = client.chat_getPermalink(channel=posted["channel"], message_ts=reply["ts"])
    assert f"thread_ts={posted['ts']}" in reply_link["permalink"]
    with urllib.request.urlopen(link) as page:  # follows the redirect to the page
        assert page.status == 200
        assert page.url.endswith(f"/#/{posted['channel']}/{posted['ts']}")
    assert (
        error_of(lambda: client.chat_getPermalink(channel=posted["channel"], message_ts="1.000001"))
        == "message_not_found"
    )


def test_posting_to_a_user_id_goes_to_the_apps_dm(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    dm = client.conversations_open(users="U0ALICE01")["channel"]["id"]
    posted = client.chat_postMessage(channel="U0ALICE01", text="hello in DM")
    assert posted["channel"] == dm
    assert dm.startswith("D")
    assert [m["text"] for m in workspace.messages(dm)] == ["hello in DM"]
