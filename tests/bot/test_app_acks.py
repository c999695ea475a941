"""Bolt's wait for a listener's ack() follows `Options.ack_timeout_s` (Slack's 3 s unless a
harness raises it): without it a starved thread's click is never acked, whatever the
workspace waits."""

from __future__ import annotations

from typing import Any

from slack_bolt import App

from bot.app import _give_acks


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
