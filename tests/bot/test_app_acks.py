"""Bolt's wait for a listener's ack() follows `Options.ack_timeout_s` (Slack's 3 s unless a
harness raises it): without it a starved thread's click is never acked, whatever the
workspace waits."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from slack_bolt import Ack, App, BoltRequest
from slack_bolt.authorization import AuthorizeResult

from bot.app import _give_acks
from bot.listeners.errors import acked_first


def test_every_listener_waits_as_long_as_it_is_told() -> None:
    app = App(token="xoxb-test", signing_secret="secret", token_verification_enabled=False)

    @app.action("approve")
    def approve(ack: Any) -> None:
        ack()

    @app.view("reason")
    def reason(ack: Any) -> None:
        ack()

    assert [listener.ack_timeout for listener in app._listeners] == [3, 3]
    _give_acks(app, 12)
    assert [listener.ack_timeout for listener in app._listeners] == [12, 12]


def _click(n: int) -> BoltRequest:
    body = {
        "type": "block_actions",
        "team": {"id": "T1"},
        "user": {"id": "U1"},
        "api_app_id": "A1",
        "token": "t",
        "trigger_id": f"tr{n}",
        "channel": {"id": "C1"},
        "actions": [{"type": "button", "action_id": "reject", "block_id": "b", "value": "v"}],
    }
    return BoltRequest(body=body, mode="socket_mode")


def test_a_listener_that_fails_right_after_its_ack_is_still_acked() -> None:
    """slack_bolt puts a listener's ack back to None when the listener raises after acking;
    if that beats the runner's 10 ms poll the click is never acked. `acked_first` reports the
    error itself, so every click is acked, however fast the listener fails."""
    app = App(
        signing_secret="secret",
        request_verification_enabled=False,
        authorize=lambda **_: AuthorizeResult(
            enterprise_id=None, team_id="T1", bot_token="xoxb-test", bot_user_id="UB", bot_id="B"
        ),
    )
    reported: list[Exception] = []
    services = SimpleNamespace(failures=SimpleNamespace(report=lambda e, o: reported.append(e)))

    def reject(ack: Ack, body: dict[str, Any]) -> None:
        ack()
        raise LookupError("plan plan-doesnotexist")  # fails within microseconds of the ack

    app.action("reject")(acked_first(services, reject))  # type: ignore[arg-type]
    _give_acks(app, 2)
    statuses = [app.dispatch(_click(n)).status for n in range(40)]
    assert statuses == [200] * 40
    deadline = time.monotonic() + 5
    while len(reported) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(reported) == 40 and all(isinstance(e, LookupError) for e in reported)
