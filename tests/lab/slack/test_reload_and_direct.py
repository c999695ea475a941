"""The page as a Slack client: a reload leaves no modal open, and a direct message from the
app is counted where the person can see it."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

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


def test_a_reload_closes_the_users_modals_only(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    view = {
        "type": "modal",
        "title": {"type": "plain_text", "text": "Undo"},
        "blocks": [{"type": "section", "text": {"type": "plain_text", "text": "Undone"}}],
    }
    for user in ("alice", "bob"):
        trigger = workspace.slash_command(user, "/stratus", "undo").payload["trigger_id"]
        client.views_open(trigger_id=trigger, view=view)
    assert act(workspace, action="reload", user="alice")["ok"]
    assert get(workspace, "/ui/state?user=alice")["modal"] is None
    assert workspace.views("alice") == []
    assert get(workspace, "/ui/state?user=bob")["modal"] is not None


def test_direct_messages_from_the_app_are_counted(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    assert get(workspace, "/ui/state?user=carol")["direct"]["count"] == 0
    carol = get(workspace, "/ui/state?user=carol")["me"]
    dm = client.conversations_open(users=[carol])["channel"]["id"]
    client.chat_postMessage(channel=dm, text="You are not an approver of this plan.")
    direct = get(workspace, "/ui/state?user=carol")["direct"]
    assert direct == {"id": dm, "count": 1, "latest": "You are not an approver of this plan."}
    assert get(workspace, "/ui/state?user=alice")["direct"]["count"] == 0
