"""The gate in front of Bolt for `/slack/events` (HTTP mode): what Slack's requests must pass
before any parsing or listener runs, in this order —

1. size: at most `MAX_SLACK_BODY` bytes (413);
2. signature: `X-Slack-Signature` over the raw bytes with the signing secret, and an integer
   `X-Slack-Request-Timestamp` within five minutes of now (401) — checked on the bytes, so
   nothing an anonymous sender writes is ever parsed;
3. replay: a signed request already seen (same timestamp and signature, kept for the
   window) is acknowledged and ignored, as is a retry (`X-Slack-Retry-Num`) of an event
   whose first delivery was taken;
4. shape: UTF-8, and JSON (or a `payload=` form holding JSON) no deeper than the limit (400).

Every refusal is one WARNING line and a 4xx: a client's mistake never costs a traceback.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from agents.jsonlimit import JsonLimitError, loads_bounded

MAX_SLACK_BODY = 1024 * 1024
WINDOW_S = 5 * 60


@dataclass(frozen=True, slots=True, kw_only=True)
class GateAnswer:
    """`status` 0: pass the request to Bolt. Otherwise answer `status` (200 for a replay)."""

    status: int = 0
    reason: str = ""

    @property
    def passes(self) -> bool:
        return self.status == 0


PASS = GateAnswer()


class ReplayGuard:
    """Keys seen within the window (signed requests, event ids), forgotten after it."""

    def __init__(self, window_s: float = WINDOW_S, now: Callable[[], float] = time.time) -> None:
        self._window_s = window_s
        self._now = now
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def first(self, key: str) -> bool:
        """True the first time `key` is offered within the window."""
        now = self._now()
        with self._lock:
            if len(self._seen) > 1024:
                self._seen = {k: t for k, t in self._seen.items() if t > now}
            expiry = self._seen.get(key)
            if expiry is not None and expiry > now:
                return False
            self._seen[key] = now + self._window_s
            return True

    def seen(self, key: str) -> bool:
        with self._lock:
            expiry = self._seen.get(key)
            return expiry is not None and expiry > self._now()


class SlackGate:
    def __init__(self, signing_secret: str, now: Callable[[], float] = time.time) -> None:
        self._secret = signing_secret.encode("utf-8") if signing_secret.strip() else None
        self._now = now
        self.replays = ReplayGuard(now=now)

    def check(self, body: bytes, headers: Mapping[str, str]) -> GateAnswer:
        """`headers` with lower-case names."""
        if len(body) > MAX_SLACK_BODY:
            return GateAnswer(status=413, reason=f"body of {len(body)} bytes")
        refused = self._signature(body, headers)
        if refused:
            return GateAnswer(status=401, reason=refused)
        timestamp, signature = headers["x-slack-request-timestamp"], headers["x-slack-signature"]
        if not self.replays.first(f"sig:{timestamp}:{signature}"):
            return GateAnswer(status=200, reason="replay of a signed request already taken")
        try:
            payload = parse_slack_body(body, headers.get("content-type"))
        except JsonLimitError as e:
            return GateAnswer(status=400, reason=str(e))
        event_id = payload.get("event_id")
        if isinstance(event_id, str) and event_id:
            retry = headers.get("x-slack-retry-num")
            if not self.replays.first(f"event:{event_id}") and retry is not None:
                return GateAnswer(status=200, reason=f"retry {retry[:8]} of event already taken")
        return PASS

    def _signature(self, body: bytes, headers: Mapping[str, str]) -> str | None:
        if self._secret is None:
            return "no signing secret is configured"
        timestamp = headers.get("x-slack-request-timestamp", "")
        signature = headers.get("x-slack-signature", "")
        if not timestamp or not signature:
            return "unsigned request"
        if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
            return "malformed timestamp"
        if abs(self._now() - int(timestamp)) > WINDOW_S:
            return "timestamp outside the five-minute window"
        # Over the raw bytes (slack_sdk's verifier decodes them first and raises on non-UTF-8).
        base = b"v0:" + timestamp.encode("ascii") + b":" + body
        expected = "v0=" + hmac.new(self._secret, base, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected.encode("ascii"), signature.encode("utf-8")):
            return "wrong signature"
        return None


def parse_slack_body(body: bytes, content_type: str | None) -> dict[str, Any]:
    """What Bolt will parse, parsed within limits first (Bolt's own parser raises on bad
    input, which would be a 500 with a traceback)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonLimitError(f"not valid JSON: not UTF-8 ({e.reason} at byte {e.start})") from None
    if not text:
        return {}
    if (content_type or "").split(";")[0].strip() == "application/json" or text.startswith("{"):
        parsed = loads_bounded(text)
    else:
        params = dict(parse_qsl(text, keep_blank_values=True))
        if "payload" not in text:
            return params
        if "payload" not in params:
            return {}
        parsed = loads_bounded(params["payload"])
    if not isinstance(parsed, dict):
        raise JsonLimitError(f"expected a JSON object, got {type(parsed).__name__}")
    return parsed
