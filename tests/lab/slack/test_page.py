"""The page's server side: assets, what each user is shown, actions, live updates.
(Browser tests of the page itself live elsewhere.)"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import aiohttp
import pytest
from slack_sdk import WebClient

from lab.slack import SlackWorkspace


def get(ws: SlackWorkspace, path: str) -> Any:
    with urllib.request.urlopen(f"{ws.url}{path}") as response:
        return json.loads(response.read())


def act(ws: SlackWorkspace, **body: Any) -> Any:
    request = urllib.request.Request(
        f"{ws.url}/ui/act",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def test_page_and_assets_are_served(workspace: SlackWorkspace) -> None:
    with urllib.request.urlopen(f"{workspace.url}/") as page:
        html = page.read().decode()
    assert 'data-testid="user-picker"' in html
    assert "/static/app.js" in html and "/static/blocks.js" in html
    for name, kind in (("app.js", "javascript"), ("blocks.js", "javascript"), ("style.css", "css")):
        with urllib.request.urlopen(f"{workspace.url}/static/{name}") as asset:
            assert kind in asset.headers["Content-Type"]
            assert asset.read()
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{workspace.url}/static/secrets.txt")
    assert caught.value.code == 404
    caught.value.close()


def test_each_user_sees_only_what_is_theirs(workspace: SlackWorkspace, client: WebClient) -> None:
    private = client.conversations_create(name="war-room", is_private=True)["channel"]["id"]
    client.conversations_invite(channel=private, users="U0ALICE01")
    client.chat_postEphemeral(channel="incidents", user="U0BOB0002", text="for bob")
    client.chat_postMessage(channel="incidents", text="for everyone")
    alice = get(workspace, "/ui/state?user=alice&channel=incidents")
    bob = get(workspace, "/ui/state?user=U0BOB0002&channel=incidents")
    assert alice["me"] == "U0ALICE01" and bob["me"] == "U0BOB0002"
    assert "war-room" in {c["name"] for c in alice["channels"]}
    assert "war-room" not in {c["name"] for c in bob["channels"]}
    assert [m["text"] for m in alice["channel"]["messages"]] == ["for everyone"]
    assert [(m["text"], m.get("is_ephemeral")) for m in bob["channel"]["messages"]] == [
        ("for bob", True),
        ("for everyone", None),
    ]
    # A private channel is not shown to someone outside it, even when asked for by name.
    assert get(workspace, "/ui/state?user=bob&channel=war-room")["channel"]["name"] != "war-room"


def test_actions_from_the_page(workspace: SlackWorkspace, client: WebClient) -> None:
    assert act(workspace, action="message", user="carol", channel="incidents", text="hi")["ok"]
    assert workspace.messages("incidents")[-1]["user"] == "U0CAROL03"
    refused = act(
        workspace, action="command", user="carol", channel="incidents", command="/nope", text=""
    )
    assert (refused["ok"], refused["error"]) == (False, "not_a_valid_command")
    button = {"type": "button", "action_id": "ack", "text": {"type": "plain_text", "text": "Ack"}}
    posted = client.chat_postMessage(
        channel="incidents", text="p", blocks=[{"type": "actions", "elements": [button]}]
    )
    clicked = act(
        workspace, action="click", user="bob", channel="incidents", ts=posted["ts"], action_id="ack"
    )
    assert clicked == {"ok": True, "acked": False, "error": "dispatch_failed"}
    assert workspace.deliveries("interactive")[-1].payload["user"]["id"] == "U0BOB0002"
    joined = act(workspace, action="join", user="dana", channel="incidents")
    assert joined["ok"]


def test_modal_shown_to_its_user_only(workspace: SlackWorkspace, client: WebClient) -> None:
    trigger = workspace.slash_command("alice", "/stratus", "declare").payload["trigger_id"]
    view = {
        "type": "modal",
        "title": {"type": "plain_text", "text": "Declare"},
        "blocks": [{"type": "section", "text": {"type": "plain_text", "text": "x"}}],
    }
    opened = client.views_open(trigger_id=trigger, view=view)["view"]
    assert get(workspace, "/ui/state?user=alice")["modal"]["id"] == opened["id"]
    assert get(workspace, "/ui/state?user=bob")["modal"] is None
    act(workspace, action="close", user="alice", view_id=opened["id"])
    assert get(workspace, "/ui/state?user=alice")["modal"] is None


def test_live_socket_announces_changes(workspace: SlackWorkspace, client: WebClient) -> None:
    async def listen() -> tuple[int, int]:
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(f"{workspace.url}/ui/live") as live,
        ):
            first = (await live.receive_json(timeout=5))["version"]
            await asyncio.to_thread(client.chat_postMessage, channel="incidents", text="news")
            second = (await live.receive_json(timeout=5))["version"]
            return first, second

    first, second = asyncio.run(listen())
    assert second > first
