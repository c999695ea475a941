"""The webhook's credentials check and the Slack gate's decisions, on values (the HTTP
behaviour is in tests/bot/scenario/test_edges.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from slack_sdk.signature import SignatureVerifier

from bot.config import SettingsError, WebhookSettings, load_settings
from bot.http.auth import WebhookAuth
from bot.http.slack_gate import WINDOW_S, SlackGate

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def signed(body: bytes, ts: float, **extra: str) -> dict[str, str]:
    timestamp = str(int(ts))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    return {
        "content-type": "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": signature,
        **extra,
    }


def test_a_replay_is_ignored_within_the_window_and_forgotten_after() -> None:
    clock = Clock(1_800_000_000)
    gate = SlackGate(SECRET, now=clock)
    body = b'{"type":"block_actions"}'
    headers = signed(body, clock.now)
    assert gate.check(body, headers).passes
    replay = gate.check(body, headers)
    assert replay.status == 200 and "replay" in replay.reason
    clock.now += WINDOW_S + 1  # outside the window the signature itself is too old
    assert gate.check(body, headers).status == 401


def test_a_retry_of_an_event_already_taken_is_ignored() -> None:
    clock = Clock(1_800_000_000)
    gate = SlackGate(SECRET, now=clock)
    body = json.dumps({"type": "event_callback", "event_id": "Ev1", "event": {}}).encode()
    assert gate.check(body, signed(body, clock.now)).passes
    clock.now += 3  # Slack re-signs a retry
    retry = gate.check(body, signed(body, clock.now, **{"x-slack-retry-num": "1"}))
    assert retry.status == 200 and "retry" in retry.reason
    other = json.dumps({"type": "event_callback", "event_id": "Ev2", "event": {}}).encode()
    # A retry whose first delivery never arrived is taken.
    assert gate.check(other, signed(other, clock.now, **{"x-slack-retry-num": "2"})).passes


def test_no_signing_secret_refuses_everything() -> None:
    body = b"{}"
    assert SlackGate("").check(body, signed(body, 1_800_000_000)).status == 401


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(
    ("settings", "header", "accepted"),
    [
        (WebhookSettings(), None, False),
        (WebhookSettings(), "Bearer anything", False),
        (WebhookSettings(token="t0k"), "Bearer t0k", True),
        (WebhookSettings(token="t0k"), "bearer t0k", True),
        (WebhookSettings(token="t0k"), "Bearer t0k ", True),
        (WebhookSettings(token="t0k"), "Bearer t0", False),
        (WebhookSettings(token="t0k"), basic("t0k", "t0k"), False),
        (WebhookSettings(username="am", password="pw"), basic("am", "pw"), True),
        (WebhookSettings(username="am", password="pw"), basic("am", "pw:"), False),
        (WebhookSettings(username="am", password="pw"), "Basic YW0=", False),
        (WebhookSettings(username="am", password="pw"), "Basic ###", False),
        (WebhookSettings(username="am", password="pw"), "Bearer pw", False),
    ],
)
def test_webhook_credentials(settings: WebhookSettings, header: str | None, accepted: bool) -> None:
    assert (WebhookAuth(settings=settings).refusal(header) is None) is accepted


def test_webhook_settings_from_files(tmp_path: Path) -> None:
    token, password = tmp_path / "token", tmp_path / "password"
    token.write_text("from-a-file\n")
    password.write_text("pw\n")
    base = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}
    webhook = load_settings(
        {
            **base,
            "STRATUS_WEBHOOK_TOKEN_FILE": str(token),
            "STRATUS_WEBHOOK_USERNAME": "am",
            "STRATUS_WEBHOOK_PASSWORD_FILE": str(password),
            "STRATUS_WEBHOOK_PORT": "9095",
        }
    ).webhook
    assert (webhook.token, webhook.username, webhook.password, webhook.port) == (
        "from-a-file",
        "am",
        "pw",
        9095,
    )
    assert "from-a-file" not in repr(webhook) and "pw'" not in repr(webhook)
    assert not load_settings(base).webhook.configured
    with pytest.raises(SettingsError, match="STRATUS_WEBHOOK_USERNAME"):
        load_settings({**base, "STRATUS_WEBHOOK_PASSWORD": "pw"})
    with pytest.raises(SettingsError, match="not both"):
        load_settings(
            {**base, "STRATUS_WEBHOOK_TOKEN": "a", "STRATUS_WEBHOOK_TOKEN_FILE": str(token)}
        )
    with pytest.raises(SettingsError, match="STRATUS_WEBHOOK_TOKEN_FILE"):
        load_settings({**base, "STRATUS_WEBHOOK_TOKEN_FILE": str(tmp_path / "missing")})
