"""response_url semantics through the real WebhookClient (what Bolt's `respond` uses)."""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient
from slack_sdk.webhook import WebhookClient

from lab.slack import SlackWorkspace

PLAN = [
    {
        "type": "actions",
        "block_id": "plan",
        "elements": [
            {
                "type": "button",
                "action_id": "approve",
                "value": "P-1",
                "text": {"type": "plain_text", "text": "Approve"},
            }
        ],
    }
]


def click_url(ws: SlackWorkspace, client: WebClient, user: str = "alice") -> tuple[str, str]:
    posted = client.chat_postMessage(channel="incidents", text="plan", blocks=PLAN)
    payload: dict[str, Any] = ws.click(user, "incidents", posted["ts"], "approve").payload
    return str(payload["response_url"]), str(posted["ts"])


def test_default_response_is_ephemeral_to_the_clicker(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    url, _ts = click_url(workspace, client, "bob")
    response = WebhookClient(url).send(text="Only you can see this")
    assert response.status_code == 200
    assert [
        m["text"] for m in workspace.ephemerals("incidents", "bob") if m["user"] != "USLACKBOT"
    ] == ["Only you can see this"]
    assert [m["text"] for m in workspace.messages("incidents")] == ["plan"]


def test_replace_and_delete_original(workspace: SlackWorkspace, client: WebClient) -> None:
    url, ts = click_url(workspace, client)
    webhook = WebhookClient(url)
    assert webhook.send(text="Approved by Alice", replace_original=True).status_code == 200
    replaced = workspace.message("incidents", ts)
    assert replaced is not None
    assert replaced["text"] == "Approved by Alice" and "blocks" not in replaced
    assert webhook.send(delete_original=True).status_code == 200
    assert workspace.message("incidents", ts) is None


def test_in_channel_response(workspace: SlackWorkspace, client: WebClient) -> None:
    url, _ts = click_url(workspace, client)
    WebhookClient(url).send(text="Everyone sees this", response_type="in_channel")
    assert [m["text"] for m in workspace.messages("incidents")] == ["plan", "Everyone sees this"]


def test_slash_command_responses_replace_the_previous_response(workspace: SlackWorkspace) -> None:
    delivery = workspace.slash_command("carol", "/stratus", "status", channel="incidents")
    url = str(delivery.payload["response_url"])
    webhook = WebhookClient(url)
    webhook.send(text="Working on it…")
    webhook.send(text="hotel-reservation: healthy", replace_original=True)
    mine = [m["text"] for m in workspace.ephemerals("incidents", "carol")]
    assert "hotel-reservation: healthy" in mine and "Working on it…" not in mine


def test_bad_responses_are_refused(workspace: SlackWorkspace, client: WebClient) -> None:
    url, _ts = click_url(workspace, client)
    too_long = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
    refused = WebhookClient(url).send(text="t", blocks=too_long)
    assert refused.status_code == 400
    assert "invalid_blocks" in refused.body
    unknown = WebhookClient(f"{workspace.url}/response/not-a-token").send(text="x")
    assert unknown.status_code == 404


def test_a_response_url_has_five_uses(workspace: SlackWorkspace, client: WebClient) -> None:
    url, _ts = click_url(workspace, client)
    webhook = WebhookClient(url)
    statuses = [webhook.send(text=f"update {i}").status_code for i in range(6)]
    assert statuses == [200, 200, 200, 200, 200, 404]
