"""The bot's untrusted edges over real HTTP: who may post alerts (Alertmanager's
`http_config` credentials, none configured → 401), the webhook on a port of its own, and what
`/slack/events` does with malformed, unsigned, oversized and replayed requests — a 4xx and one
WARNING line each, never a 500 with a traceback."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import sqlite3
import time
from urllib.parse import urlencode

import pytest
from slack_sdk.signature import SignatureVerifier

from lab.slack.delivery.outcome import EnvelopeKind
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL, WEBHOOK_TOKEN, BotLab
from tests.bot.scenario.test_endpoints import alertmanager_payload, call, post_alerts, started


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_the_webhook_takes_only_alertmanagers_credentials(make_lab: MakeLab) -> None:
    lab = make_lab(
        settings={"STRATUS_WEBHOOK_USERNAME": "alertmanager", "STRATUS_WEBHOOK_PASSWORD": "pw"}
    )
    payload = alertmanager_payload(HOTEL, starts_at=started(lab))
    for authorization in (
        None,
        "",
        "Bearer wrong",
        f"Bearer {WEBHOOK_TOKEN}x",
        f"bearer{WEBHOOK_TOKEN}",
        basic("alertmanager", "wrong"),
        basic("someone", "pw"),
        "Basic !!!not-base64",
        f"Token {WEBHOOK_TOKEN}",
    ):
        status, answer = post_alerts(lab, payload, authorization)
        assert (status, answer) == (401, {"error": "unauthorized"}), authorization
    assert lab.services.store.incidents.list_open() == []

    status, answer = post_alerts(lab, payload, basic("alertmanager", "pw"))
    assert status == 200 and len(answer["opened"]) == 1, answer
    status, answer = post_alerts(lab, payload, f"Bearer {WEBHOOK_TOKEN}")
    assert status == 200 and answer["opened"] == [], answer  # the same alert: no new incident


def test_with_no_credentials_configured_every_call_is_refused(make_lab: MakeLab) -> None:
    lab = make_lab(settings={"STRATUS_WEBHOOK_TOKEN": ""})
    payload = alertmanager_payload(HOTEL, starts_at=started(lab))
    for authorization in (None, "Bearer ", f"Bearer {WEBHOOK_TOKEN}", basic("", "")):
        assert post_alerts(lab, payload, authorization)[0] == 401
    assert lab.services.store.incidents.list_open() == []


def test_the_webhook_can_have_a_port_of_its_own(make_lab: MakeLab) -> None:
    lab = make_lab(settings={"STRATUS_WEBHOOK_PORT": "0"})
    runtime = lab.runtime
    assert runtime.webhook_port not in (0, runtime.http_port)
    payload = json.dumps(alertmanager_payload(HOTEL, starts_at=started(lab))).encode()
    auth = {"Authorization": f"Bearer {WEBHOOK_TOKEN}"}
    assert call(lab, "POST", "/alerts/alertmanager", payload, auth)[0] == 404
    status, _ = call(lab, "POST", "", payload, auth, url=runtime.webhook_url)
    assert status == 200
    webhook_base = runtime.webhook_url.removesuffix("/alerts/alertmanager")
    assert call(lab, "GET", "", url=f"{webhook_base}/healthz")[0] == 200
    assert call(lab, "GET", "", url=f"{webhook_base}/metrics")[0] == 404
    assert call(lab, "GET", "/readyz")[0] == 200


def test_hostile_alert_bodies_are_400_not_500(
    make_lab: MakeLab, caplog: pytest.LogCaptureFixture
) -> None:
    lab = make_lab()
    far = alertmanager_payload(HOTEL, starts_at=started(lab))
    far["alerts"][0]["startsAt"] = "9999-12-31T23:59:59-05:00"
    early = alertmanager_payload(HOTEL, starts_at=started(lab))
    early["alerts"][0]["endsAt"] = "0001-01-01T00:00:00+14:00"
    with caplog.at_level(logging.WARNING, logger="bot.http"):
        for body in (far, b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5000, b"\xff\xfe{"):
            status, answer = post_alerts(lab, body)
            assert status == 400, answer
        status, answer = post_alerts(lab, early)
        assert status in (200, 400), answer
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


# ---------------------------------------------------------------------------- /slack/events


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """Slack's signature, with slack_sdk's verifier where the body is text (it decodes the
    body as UTF-8 first) and the same HMAC by hand for the non-UTF-8 cases."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        base = b"v0:" + timestamp.encode() + b":" + body
        return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    return signature


def slack_post(
    lab: BotLab,
    body: bytes,
    *,
    content_type: str = "application/x-www-form-urlencoded",
    signed: bool = True,
    timestamp: str | None = None,
    extra: dict[str, str] | None = None,
) -> tuple[int, bytes, dict[str, str]]:
    headers = {"Content-Type": content_type, **(extra or {})}
    if signed:
        ts = timestamp or str(int(time.time()))
        signature = sign(lab.ws.config.signing_secret, ts, body)
        headers |= {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}
    status, answer = call(lab, "POST", "/slack/events", body, headers)
    return status, answer, headers


def test_slack_faults_are_4xx_with_one_warning_and_no_traceback(
    make_lab: MakeLab, caplog: pytest.LogCaptureFixture
) -> None:
    lab = make_lab(mode="http")
    deep = b'{"type":"event_callback","event":' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    cases: list[tuple[bytes, str, bool, str | None, int]] = [
        (b"{", "application/json", False, None, 401),
        (b"payload={x", "application/x-www-form-urlencoded", False, None, 401),
        (b"\xff\xfe\xfd", "application/x-www-form-urlencoded", False, None, 401),
        (b"{}", "application/json", True, "not-a-number", 401),
        (b"{}", "application/json", True, "99999999999", 401),
        (b"{}", "application/json", True, str(int(time.time()) - 600), 401),
        (b"{", "application/json", True, None, 400),
        (b"payload={x", "application/x-www-form-urlencoded", True, None, 400),
        (b"payload=1", "application/x-www-form-urlencoded", True, None, 400),
        (b"\xff\xfe\xfd", "application/x-www-form-urlencoded", True, None, 400),
        (deep, "application/json", True, None, 400),
        (b"x" * (1024 * 1024 + 1), "application/json", True, None, 413),
    ]
    for body, content_type, signed, timestamp, expected in cases:
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            status, _, _ = slack_post(
                lab, body, content_type=content_type, signed=signed, timestamp=timestamp
            )
        assert status == expected, (body[:20], signed, timestamp)
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert warnings[0].levelno == logging.WARNING and not warnings[0].exc_info
    assert call(lab, "GET", "/healthz")[0] == 200


def test_a_replayed_signed_command_runs_once(make_lab: MakeLab) -> None:
    lab = make_lab(mode="http")
    ws = lab.ws
    assert ws.slash_command("alice", "/stratus", "help", channel="incidents").acked
    [first] = ws.deliveries(EnvelopeKind.SLASH_COMMANDS)
    # Signed anew two minutes ago (not the workspace's own signature), then replayed three
    # times within the five-minute window: the command answers (in its ack) once.
    fields = {k: str(v) for k, v in first.payload.items()}
    body = urlencode(fields).encode()
    status, answer, headers = slack_post(lab, body, timestamp=str(int(time.time()) - 120))
    assert status == 200 and b"/stratus declare" in answer, answer
    for _ in range(3):
        assert call(lab, "POST", "/slack/events", body, headers) == (200, b"")
    # A new signature over the same body is a new request (Slack signs each delivery).
    status, answer, _ = slack_post(lab, body, timestamp=str(int(time.time()) - 60))
    assert status == 200 and b"/stratus declare" in answer, answer


def test_readiness_needs_a_database_write(make_lab: MakeLab) -> None:
    """Reads still work while another process holds the write lock: the bot cannot act, so it
    is not ready (it waits its busy timeout, then says why)."""
    lab = make_lab()
    answer = json.loads(call(lab, "GET", "/readyz")[1])
    assert {k: answer[k] for k in ("ready", "checks")} == {
        "ready": True,
        "checks": {"database": True, "slack": True},
    }
    # The only replica leads: /readyz says who holds the cluster's lease.
    assert answer["leader"]["leading"] is True
    assert answer["leader"]["holder"] == answer["leader"]["identity"]
    other = sqlite3.connect(lab.tmp / "stratus.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        assert lab.services.store.incidents.list_open() == []  # reads are fine
        status, body = call(lab, "GET", "/readyz")
        answer = json.loads(body)
        assert status == 503 and answer["checks"] == {"database": False, "slack": True}
        assert answer["reasons"]["database"].startswith("database write failed")
        assert call(lab, "GET", "/healthz")[0] == 200
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert call(lab, "GET", "/readyz")[0] == 200
