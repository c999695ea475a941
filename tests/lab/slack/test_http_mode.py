"""HTTP mode: signed POSTs to a real Bolt app served on 127.0.0.1, and to a recording server
that checks the wire format and signatures with slack_sdk's own verifier."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from slack_bolt import Ack, Respond
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier

from lab.slack import EnvelopeKind, SlackWorkspace, Transport, WorkspaceConfig
from tests.lab.slack.conftest import bolt_app, http_mode

TIMEOUT = 5.0


def test_url_verification(workspace: SlackWorkspace) -> None:
    with http_mode(bolt_app(workspace), workspace) as url:
        assert workspace.verify_request_url(url)


def test_slash_command_click_and_modal_over_http(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    app = bolt_app(workspace)
    seen: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()

    @app.command("/stratus")
    def status(ack: Ack, command: dict[str, Any], respond: Respond) -> None:
        ack("Checking…")
        seen.put(("command", command))
        respond(text="hotel-reservation: 1 open incident")

    @app.action("approve")
    def approve(ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        ack()
        seen.put(("action", body))
        client.views_open(
            trigger_id=body["trigger_id"],
            view={
                "type": "modal",
                "callback_id": "confirm",
                "title": {"type": "plain_text", "text": "Confirm"},
                "submit": {"type": "plain_text", "text": "Run"},
                "blocks": [
                    {
                        "type": "input",
                        "block_id": "note",
                        "label": {"type": "plain_text", "text": "Note"},
                        "element": {"type": "plain_text_input", "action_id": "text"},
                    }
                ],
            },
        )

    @app.view("confirm")
    def confirm(ack: Ack, view: dict[str, Any]) -> None:
        ack()
        seen.put(("view", view))

    button = {
        "type": "button",
        "action_id": "approve",
        "value": "P-1",
        "text": {"type": "plain_text", "text": "Approve"},
    }
    plan = client.chat_postMessage(
        channel="incidents", text="plan", blocks=[{"type": "actions", "elements": [button]}]
    )
    with http_mode(app, workspace):
        command = workspace.slash_command("alice", "/stratus", "status", channel="incidents")
        assert command.transport is Transport.HTTP and command.status == 200
        assert command.ack_payload == {"text": "Checking…"}
        assert seen.get(timeout=TIMEOUT)[1]["text"] == "status"
        workspace.wait_until(lambda: len(workspace.ephemerals("incidents", "alice")) == 2)

        workspace.click("bob", "incidents", plan["ts"], "approve")
        kind, body = seen.get(timeout=TIMEOUT)
        assert kind == "action" and body["user"]["id"] == "U0BOB0002"
        view = workspace.wait_until(lambda: workspace.views("bob"))[0]
        assert workspace.submit_view("bob", view["id"], {"text": "go"}).acked
        kind, submitted = seen.get(timeout=TIMEOUT)
    assert kind == "view"
    assert submitted["state"]["values"]["note"]["text"]["value"] == "go"
    assert workspace.views("bob") == []
    # The ack and the respond() race, as with Slack: both arrive, in either order.
    assert {m["text"] for m in workspace.ephemerals("incidents", "alice")} == {
        "Checking…",
        "hotel-reservation: 1 open incident",
    }


def test_app_home_over_http(workspace: SlackWorkspace) -> None:
    app = bolt_app(workspace)

    @app.event("app_home_opened")
    def home(event: dict[str, Any], client: WebClient) -> None:
        client.views_publish(
            user_id=event["user"],
            view={
                "type": "home",
                "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Hi"}}],
            },
        )

    with http_mode(app, workspace):
        delivery = workspace.open_app_home("carol")
        assert delivery is not None and delivery.acked
        assert (
            workspace.wait_until(lambda: workspace.home_view("carol"))["blocks"][0]["text"]["text"]
            == "Hi"
        )


def test_bolt_refuses_a_wrong_secret_and_a_stale_timestamp(workspace: SlackWorkspace) -> None:
    app = bolt_app(workspace)
    calls: list[str] = []

    @app.command("/stratus")
    def status(ack: Ack) -> None:
        calls.append("ran")
        ack("ok")

    with http_mode(app, workspace):
        workspace.sign_requests(secret="not-the-signing-secret")
        forged = workspace.slash_command("alice", "/stratus", "status", channel="incidents")
        workspace.sign_requests(clock_skew_s=-600)
        stale = workspace.slash_command("alice", "/stratus", "status", channel="incidents")
        workspace.sign_requests()
        good = workspace.slash_command("alice", "/stratus", "status", channel="incidents")
    assert (forged.status, forged.acked, forged.error) == (401, False, "http_status_401")
    assert (stale.status, stale.acked) == (401, False)
    assert good.acked and calls == ["ran"]
    notes = [m["text"] for m in workspace.ephemerals("incidents", "alice")]
    assert notes[0] == '/stratus failed with the error "http_status_401"'


# ----------------------------------------------------------------------------- the wire format


class _Recorder(BaseHTTPRequestHandler):
    requests: queue.Queue[tuple[dict[str, str], bytes]]
    statuses: list[int]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.requests.put(({k.lower(): v for k, v in self.headers.items()}, body))
        status = self.statuses.pop(0) if self.statuses else 200
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def recorder(statuses: list[int] | None = None) -> Iterator[tuple[str, queue.Queue[Any]]]:
    requests: queue.Queue[tuple[dict[str, str], bytes]] = queue.Queue()
    handler = type("Handler", (_Recorder,), {"requests": requests, "statuses": statuses or []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/slack/events", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_requests_are_signed_and_shaped_like_slacks() -> None:
    # Without echoes of the bot's own post, the recorder sees exactly the three requests.
    with SlackWorkspace(WorkspaceConfig(echo_bot_messages=False)) as workspace:
        check_requests(
            workspace, WebClient(base_url=workspace.api_url, token=workspace.config.bot_token)
        )


def check_requests(workspace: SlackWorkspace, client: WebClient) -> None:
    verifier = SignatureVerifier(workspace.config.signing_secret)
    button = {"type": "button", "action_id": "go", "text": {"type": "plain_text", "text": "Go"}}
    plan = client.chat_postMessage(
        channel="incidents", text="p", blocks=[{"type": "actions", "elements": [button]}]
    )
    with recorder() as (url, requests):
        workspace.use_http(url)
        workspace.slash_command("alice", "/stratus", "status hotel", channel="incidents")
        workspace.click("alice", "incidents", plan["ts"], "go")
        workspace.open_app_home("alice")
        received = [requests.get(timeout=TIMEOUT) for _ in range(3)]
    for headers, body in received:
        assert verifier.is_valid(
            body=body.decode(),
            timestamp=headers["x-slack-request-timestamp"],
            signature=headers["x-slack-signature"],
        )
    (command_headers, command), (_, action), (event_headers, event) = received
    assert command_headers["content-type"] == "application/x-www-form-urlencoded"
    fields = {k: v[0] for k, v in parse_qs(command.decode()).items()}
    assert (fields["command"], fields["text"], fields["user_id"]) == (
        "/stratus",
        "status hotel",
        "U0ALICE01",
    )
    assert fields["response_url"].startswith(workspace.url) and fields["trigger_id"]
    interaction = json.loads(parse_qs(action.decode())["payload"][0])
    assert interaction["type"] == "block_actions"
    assert interaction["actions"][0]["action_id"] == "go"
    assert event_headers["content-type"] == "application/json"
    callback = json.loads(event)
    assert callback["type"] == "event_callback"
    assert callback["event"]["type"] == "app_home_opened"


def test_events_are_retried_with_retry_headers(fast_workspace: SlackWorkspace) -> None:
    ws = fast_workspace
    with recorder(statuses=[500]) as (url, requests):
        ws.use_http(url)
        ws.post_as_user("bob", "incidents", "hello?")
        first_headers, first = requests.get(timeout=TIMEOUT)
        retry_headers, retry = requests.get(timeout=TIMEOUT)
        ws.wait_until(lambda: [d for d in ws.deliveries(EnvelopeKind.EVENTS_API) if d.acked])
    assert "x-slack-retry-num" not in first_headers
    assert retry_headers["x-slack-retry-num"] == "1"
    assert retry_headers["x-slack-retry-reason"] == "http_error"
    assert json.loads(first)["event_id"] == json.loads(retry)["event_id"]
    failed = ws.deliveries(EnvelopeKind.EVENTS_API)[0]
    assert (failed.status, failed.error) == (500, "http_status_500")
