"""A real Bolt app in Socket Mode against the workspace, and the raw protocol underneath."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from slack_bolt import Ack, Respond
from slack_sdk import WebClient
from slack_sdk.socket_mode import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from bot.socket_close import close_socket_mode
from lab.slack import EnvelopeKind, SlackWorkspace
from tests.lab.slack.conftest import bolt_app, socket_mode

TIMEOUT = 5.0

PLAN_BLOCKS: list[dict[str, Any]] = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Plan P-3* — patch Service `geo`"}},
    {
        "type": "actions",
        "block_id": "plan",
        "elements": [
            {
                "type": "button",
                "action_id": "approve",
                "style": "primary",
                "value": "P-3",
                "text": {"type": "plain_text", "text": "Approve"},
            },
            {
                "type": "button",
                "action_id": "reject",
                "style": "danger",
                "value": "P-3",
                "text": {"type": "plain_text", "text": "Reject"},
            },
        ],
    },
]

REJECT_MODAL = {
    "type": "modal",
    "callback_id": "reject_plan",
    "private_metadata": "P-3",
    "title": {"type": "plain_text", "text": "Reject plan"},
    "submit": {"type": "plain_text", "text": "Reject"},
    "blocks": [
        {
            "type": "input",
            "block_id": "reason",
            "label": {"type": "plain_text", "text": "Why?"},
            "element": {"type": "plain_text_input", "action_id": "text", "multiline": True},
        },
        {
            "type": "input",
            "block_id": "next",
            "label": {"type": "plain_text", "text": "What next"},
            "element": {
                "type": "radio_buttons",
                "action_id": "choice",
                "options": [
                    {"text": {"type": "plain_text", "text": "Escalate"}, "value": "escalate"},
                    {"text": {"type": "plain_text", "text": "Another plan"}, "value": "replan"},
                ],
            },
        },
    ],
}


def test_slash_command_reaches_the_listener_and_its_response_appears(
    workspace: SlackWorkspace,
) -> None:
    app = bolt_app(workspace)
    seen: queue.Queue[dict[str, Any]] = queue.Queue()

    @app.command("/stratus")
    def status(ack: Ack, command: dict[str, Any], respond: Respond) -> None:
        ack(f"Looking up {command['text']}…")
        seen.put(command)
        respond(response_type="in_channel", text=f"*{command['text']}*: 1 open incident")

    with socket_mode(app, workspace):
        delivery = workspace.slash_command("alice", "/stratus", "status hotel", channel="incidents")
        assert delivery.acked
        assert delivery.ack_payload == {"text": "Looking up status hotel…"}
        assert (
            delivery.latency_s is not None and delivery.latency_s < workspace.config.ack_timeout_s
        )
        command = seen.get(timeout=TIMEOUT)
        assert (command["user_id"], command["command"], command["text"]) == (
            "U0ALICE01",
            "/stratus",
            "status hotel",
        )
        assert command["channel_id"] == workspace.channel("incidents")["id"]
        shown = workspace.wait_for_message("incidents", lambda m: "open incident" in m["text"])
        assert shown["bot_id"] == workspace.config.bot_id
    assert [m["text"] for m in workspace.ephemerals("incidents", "alice")] == [
        "Looking up status hotel…"
    ]
    assert workspace.ephemerals("incidents", "bob") == []


def test_button_click_reaches_the_action_listener_as_the_clicking_user(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    app = bolt_app(workspace)
    clicks: queue.Queue[dict[str, Any]] = queue.Queue()

    @app.action("approve")
    def approve(ack: Ack, body: dict[str, Any], respond: Respond) -> None:
        ack()
        clicks.put(body)
        respond(replace_original=True, text=f"Approved by <@{body['user']['id']}>")

    plan = client.chat_postMessage(channel="incidents", text="Plan P-3", blocks=PLAN_BLOCKS)
    with socket_mode(app, workspace):
        delivery = workspace.click("bob", "incidents", plan["ts"], "approve")
        assert delivery.acked
        body = clicks.get(timeout=TIMEOUT)
        assert body["type"] == "block_actions"
        assert body["user"]["id"] == "U0BOB0002"
        assert body["actions"][0]["action_id"] == "approve"
        assert body["actions"][0]["value"] == "P-3"
        assert body["actions"][0]["block_id"] == "plan"
        assert body["container"]["message_ts"] == plan["ts"]
        assert body["message"]["ts"] == plan["ts"]
        assert body["channel"]["id"] == plan["channel"]
        assert body["trigger_id"] and body["response_url"]
        workspace.wait_until(
            lambda: (
                (workspace.message("incidents", plan["ts"]) or {})
                .get("text", "")
                .startswith("Approved")
            )
        )
    replaced = workspace.message("incidents", plan["ts"])
    assert replaced is not None and replaced["text"] == "Approved by <@U0BOB0002>"


def test_modal_opens_with_the_trigger_and_its_submission_reaches_the_view_listener(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    app = bolt_app(workspace)
    submissions: queue.Queue[dict[str, Any]] = queue.Queue()

    @app.action("reject")
    def reject(ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        ack()
        client.views_open(trigger_id=body["trigger_id"], view=REJECT_MODAL)

    @app.view("reject_plan")
    def on_submit(ack: Ack, view: dict[str, Any], body: dict[str, Any]) -> None:
        reason = view["state"]["values"]["reason"]["text"]["value"]
        if len(reason) < 5:
            ack(response_action="errors", errors={"reason": "Say a bit more."})
            return
        ack()
        submissions.put(body)

    plan = client.chat_postMessage(channel="incidents", text="Plan P-3", blocks=PLAN_BLOCKS)
    with socket_mode(app, workspace):
        workspace.click("alice", "incidents", plan["ts"], "reject")
        opened = workspace.wait_until(lambda: workspace.views("alice"))
        view_id = opened[0]["id"]
        assert opened[0]["callback_id"] == "reject_plan"

        first = workspace.submit_view("alice", view_id, {"text": "no", "choice": "replan"})
        assert first.ack_payload is not None and first.ack_payload["response_action"] == "errors"
        still_open = workspace.views("alice")
        assert [v["id"] for v in still_open] == [view_id]
        assert still_open[0]["errors"] == {"reason": "Say a bit more."}

        second = workspace.submit_view(
            "alice", view_id, {"text": "wrong service", "choice": "replan"}
        )
        assert second.acked
        body = submissions.get(timeout=TIMEOUT)
    assert body["type"] == "view_submission"
    assert body["user"]["id"] == "U0ALICE01"
    assert body["view"]["id"] == view_id
    assert body["view"]["private_metadata"] == "P-3"
    values = body["view"]["state"]["values"]
    assert values["reason"]["text"]["value"] == "wrong service"
    assert values["next"]["choice"]["selected_option"]["value"] == "replan"
    assert workspace.views("alice") == []


def test_response_action_push_and_update(workspace: SlackWorkspace) -> None:
    app = bolt_app(workspace)
    step2 = {
        **REJECT_MODAL,
        "callback_id": "step2",
        "title": {"type": "plain_text", "text": "Step 2"},
    }

    @app.command("/stratus")
    def declare(ack: Ack, command: dict[str, Any], client: WebClient) -> None:
        ack()
        client.views_open(trigger_id=command["trigger_id"], view=REJECT_MODAL)

    @app.view("reject_plan")
    def push(ack: Ack) -> None:
        ack(response_action="push", view=step2)

    @app.view("step2")
    def update(ack: Ack) -> None:
        ack(
            response_action="update",
            view={**step2, "title": {"type": "plain_text", "text": "Done"}},
        )

    with socket_mode(app, workspace):
        workspace.slash_command("carol", "/stratus", "declare")
        root = workspace.wait_until(lambda: workspace.views("carol"))[0]
        workspace.submit_view("carol", root["id"], {"text": "enough words", "choice": "escalate"})
        stack = workspace.views("carol")
        assert [v["title"]["text"] for v in stack] == ["Reject plan", "Step 2"]
        assert stack[1]["previous_view_id"] == root["id"]
        workspace.submit_view("carol", stack[1]["id"], {"text": "more words", "choice": "escalate"})
        assert [v["title"]["text"] for v in workspace.views("carol")] == ["Reject plan", "Done"]


def test_closing_a_modal_that_asked_to_be_told(workspace: SlackWorkspace) -> None:
    app = bolt_app(workspace)
    closed: queue.Queue[dict[str, Any]] = queue.Queue()

    @app.command("/stratus")
    def declare(ack: Ack, command: dict[str, Any], client: WebClient) -> None:
        ack()
        client.views_open(
            trigger_id=command["trigger_id"], view={**REJECT_MODAL, "notify_on_close": True}
        )

    @app.view_closed("reject_plan")
    def on_close(ack: Ack, body: dict[str, Any]) -> None:
        ack()
        closed.put(body)

    with socket_mode(app, workspace):
        workspace.slash_command("bob", "/stratus", "declare")
        view = workspace.wait_until(lambda: workspace.views("bob"))[0]
        delivery = workspace.close_view("bob", view["id"])
        assert delivery is not None and delivery.acked
        body = closed.get(timeout=TIMEOUT)
    assert (body["type"], body["user"]["id"], body["is_cleared"]) == (
        "view_closed",
        "U0BOB0002",
        False,
    )
    assert workspace.views("bob") == []


def test_app_home_opened_reaches_the_listener_and_publish_stores_the_home(
    workspace: SlackWorkspace,
) -> None:
    app = bolt_app(workspace)
    opened: queue.Queue[dict[str, Any]] = queue.Queue()

    @app.event("app_home_opened")
    def home(event: dict[str, Any], client: WebClient) -> None:
        opened.put(event)
        client.views_publish(
            user_id=event["user"],
            view={
                "type": "home",
                "blocks": [
                    {
                        "type": "section",
                        "text": {"type": "mrkdwn", "text": "*Approvals waiting: 1*"},
                    },
                    {
                        "type": "actions",
                        "elements": [
                            {
                                "type": "button",
                                "action_id": "undo",
                                "value": "tx-9",
                                "text": {"type": "plain_text", "text": "Undo"},
                            }
                        ],
                    },
                ],
            },
        )

    undone: queue.Queue[dict[str, Any]] = queue.Queue()

    @app.action("undo")
    def undo(ack: Ack, body: dict[str, Any]) -> None:
        ack()
        undone.put(body)

    with socket_mode(app, workspace):
        assert workspace.open_app_home("dana") is not None
        event = opened.get(timeout=TIMEOUT)
        assert event["user"] == "U0DANA004" and event["tab"] == "home"
        home_view = workspace.wait_until(lambda: workspace.home_view("dana"))
        assert home_view["blocks"][0]["text"]["text"] == "*Approvals waiting: 1*"
        workspace.open_app_home("dana")
        assert opened.get(timeout=TIMEOUT)["view"]["id"] == home_view["id"]
        workspace.click_in_view("dana", home_view["id"], "undo")
        body = undone.get(timeout=TIMEOUT)
    assert body["container"] == {"type": "view", "view_id": home_view["id"]}
    assert body["view"]["type"] == "home"
    assert body["actions"][0]["value"] == "tx-9"


def test_messages_and_mentions(workspace: SlackWorkspace, client: WebClient) -> None:
    app = bolt_app(workspace)
    mentions: queue.Queue[dict[str, Any]] = queue.Queue()
    messages: queue.Queue[dict[str, Any]] = queue.Queue()
    bot = workspace.config.bot_user_id

    @app.event("app_mention")
    def mention(event: dict[str, Any]) -> None:
        mentions.put(event)

    @app.event("message")
    def message(event: dict[str, Any]) -> None:
        messages.put(event)

    with socket_mode(app, workspace):
        client.chat_postMessage(channel="incidents", text="the bot's own post")
        ts = workspace.post_as_user("carol", "incidents", f"<@{bot}> is this the 10:39 deploy?")
        mention_event = mentions.get(timeout=TIMEOUT)
        assert (mention_event["user"], mention_event["ts"]) == ("U0CAROL03", ts)
        workspace.post_as_user("bob", "incidents", "plain words", thread_ts=ts)
        first = messages.get(timeout=TIMEOUT)
        second = messages.get(timeout=TIMEOUT)
    # Bolt drops the bot's own message events; the workspace sent them, as Slack does.
    assert [first["user"], second["user"]] == ["U0CAROL03", "U0BOB0002"]
    assert second["thread_ts"] == ts
    echoed = [
        d for d in workspace.deliveries(EnvelopeKind.EVENTS_API) if d.payload["event"].get("bot_id")
    ]
    assert echoed and echoed[0].payload["event"]["text"] == "the bot's own post"


def test_member_joined_channel(workspace: SlackWorkspace, client: WebClient) -> None:
    app = bolt_app(workspace)
    joined: queue.Queue[dict[str, Any]] = queue.Queue()

    @app.event("member_joined_channel")
    def on_join(event: dict[str, Any]) -> None:
        joined.put(event)

    with socket_mode(app, workspace):
        channel = client.conversations_create(name="inc-joins")["channel"]["id"]
        client.conversations_invite(channel=channel, users="U0BOB0002")
        event = joined.get(timeout=TIMEOUT)
        assert (event["user"], event["channel"], event["inviter"]) == (
            "U0BOB0002",
            channel,
            workspace.config.bot_user_id,
        )
        workspace.join_channel("carol", channel)
        assert joined.get(timeout=TIMEOUT)["user"] == "U0CAROL03"


def test_disconnect_then_reconnect(workspace: SlackWorkspace) -> None:
    app = bolt_app(workspace)

    @app.command("/stratus")
    def status(ack: Ack) -> None:
        ack("still here")

    with socket_mode(app, workspace):
        assert workspace.disconnect_socket("refresh_requested") == 1
        workspace.wait_until(
            lambda: workspace.socket_connections_opened == 2 and workspace.socket_connections == 1
        )
        delivery = workspace.slash_command("alice", "/stratus", "ping")
        assert delivery.acked and delivery.ack_payload == {"text": "still here"}


# ----------------------------------------------------------------------------- the raw protocol


@contextmanager
def raw_client(ws: SlackWorkspace, *, ack: Any) -> Iterator[list[dict[str, Any]]]:
    """slack_sdk's built-in SocketModeClient without Bolt; `ack(request)` decides whether
    to acknowledge each envelope. Yields every message received, in order."""
    received: list[dict[str, Any]] = []
    client = SocketModeClient(
        app_token=ws.config.app_token, web_client=WebClient(base_url=ws.api_url)
    )

    def on_message(_client: Any, message: dict[str, Any], _raw: str | None) -> None:
        received.append(message)

    def on_request(sm: Any, request: SocketModeRequest) -> None:
        if ack(request):
            sm.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))

    client.message_listeners.append(on_message)
    client.socket_mode_request_listeners.append(on_request)
    client.connect()
    ws.wait_until(lambda: ws.socket_connections)
    try:
        yield received
    finally:
        assert close_socket_mode(client)


def test_hello_then_envelopes_as_slack_sends_them(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    with raw_client(workspace, ack=lambda request: True) as received:
        client.chat_postMessage(channel="incidents", text="an event for the app")
        workspace.wait_until(lambda: [d for d in workspace.deliveries() if d.acked])
        command = workspace.slash_command("alice", "/stratus", "help")
        assert command.acked and command.ack_payload is None
    assert received[0]["type"] == "hello"
    assert received[0]["connection_info"]["app_id"] == workspace.config.app_id
    event = next(m for m in received if m.get("type") == "events_api")
    assert set(event) == {
        "envelope_id",
        "type",
        "payload",
        "accepts_response_payload",
        "retry_attempt",
        "retry_reason",
    }
    assert event["accepts_response_payload"] is False
    assert (event["retry_attempt"], event["retry_reason"]) == (0, "")
    assert event["payload"]["type"] == "event_callback"
    assert event["payload"]["event"]["text"] == "an event for the app"
    slash = next(m for m in received if m.get("type") == "slash_commands")
    assert slash["accepts_response_payload"] is True
    assert all(d.latency_s is not None for d in workspace.deliveries() if d.acked)


def test_an_unacknowledged_event_is_retried(fast_workspace: SlackWorkspace) -> None:
    ws = fast_workspace
    attempts: list[int] = []

    def ack_second(request: SocketModeRequest) -> bool:
        attempts.append(request.retry_attempt or 0)
        return len(attempts) > 1

    with raw_client(ws, ack=ack_second):
        ws.post_as_user("alice", "incidents", "anyone?")
        ws.wait_until(lambda: [d for d in ws.deliveries() if d.acked])
    first, *retries = ws.deliveries(EnvelopeKind.EVENTS_API)
    assert (first.retry_attempt, first.acked, first.error) == (0, False, "operation_timeout")
    # The client acks the first retry it sees; on a slow machine Slack might retry once more.
    acked = next(d for d in retries if d.acked)
    assert acked.retry_attempt >= 1 and acked.retry_reason == "timeout"
    assert acked.payload["event_id"] == first.payload["event_id"]
    assert attempts[:2] == [0, 1]


def test_an_unacknowledged_command_shows_the_user_an_error(fast_workspace: SlackWorkspace) -> None:
    ws = fast_workspace
    with raw_client(ws, ack=lambda request: False):
        delivery = ws.slash_command("bob", "/stratus", "status", channel="incidents")
    assert not delivery.acked and delivery.error == "operation_timeout"
    assert len(ws.deliveries(EnvelopeKind.SLASH_COMMANDS)) == 1  # never retried
    notes = ws.ephemerals("incidents", "bob")
    assert notes[0]["user"] == "USLACKBOT"
    assert notes[0]["text"] == '/stratus failed with the error "operation_timeout"'
