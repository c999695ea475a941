"""HTTP mode: signed POSTs to the app's Request URL, as Slack sends them.

Events travel as JSON, interactions as a form with one `payload` field holding JSON, slash
commands as plain form fields. Every request is signed: `X-Slack-Signature` is
`v0=` + HMAC-SHA256 of `v0:{timestamp}:{body}` keyed with the signing secret, next to
`X-Slack-Request-Timestamp`. A test can make the workspace sign with a wrong secret or a
skewed clock to prove the app refuses such requests (Bolt answers 401).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import urlencode

import aiohttp

from agents.model import JsonObject
from lab.slack.delivery.outcome import EnvelopeKind
from lab.slack.delivery.socket_mode import AckResult
from lab.slack.store import WorkspaceState

USER_AGENT = "Slackbot 1.0 (+https://api.slack.com/robots)"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def encode_body(kind: EnvelopeKind, payload: JsonObject) -> tuple[bytes, str]:
    """The request body and its content type for one kind of payload."""
    if kind is EnvelopeKind.EVENTS_API:
        return json.dumps(payload).encode(), "application/json"
    if kind is EnvelopeKind.INTERACTIVE:
        form = urlencode({"payload": json.dumps(payload)})
        return form.encode(), "application/x-www-form-urlencoded"
    return urlencode({k: str(v) for k, v in payload.items()}).encode(), (
        "application/x-www-form-urlencoded"
    )


class HttpSender:
    def __init__(self, state: WorkspaceState) -> None:
        self.state = state
        self.secret_override: str | None = None
        self.clock_skew_s = 0.0
        self._session: aiohttp.ClientSession | None = None

    def sign_with(self, *, secret: str | None, clock_skew_s: float) -> None:
        self.secret_override = secret
        self.clock_skew_s = clock_skew_s

    def headers(self, body: bytes, content_type: str) -> dict[str, str]:
        secret = self.secret_override or self.state.config.signing_secret
        timestamp = str(int(time.time() + self.clock_skew_s))
        return {
            "Content-Type": content_type,
            "User-Agent": USER_AGENT,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature(secret, timestamp, body),
        }

    async def post(
        self,
        url: str,
        *,
        kind: EnvelopeKind | None,
        payload: JsonObject,
        timeout: float,
        retry_attempt: int = 0,
        retry_reason: str = "",
    ) -> tuple[AckResult, int | None]:
        """POST one payload; the ack is the app's 200 response and its body."""
        if kind is None:  # url_verification: JSON, like events
            body, content_type = json.dumps(payload).encode(), "application/json"
        else:
            body, content_type = encode_body(kind, payload)
        headers = self.headers(body, content_type)
        if retry_attempt:
            headers["X-Slack-Retry-Num"] = str(retry_attempt)
            headers["X-Slack-Retry-Reason"] = retry_reason
        if self._session is None:
            self._session = aiohttp.ClientSession()
        started = time.monotonic()
        try:
            async with self._session.post(
                url, data=body, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as response:
                text = await response.text()
                latency = time.monotonic() - started
                if response.status != 200:
                    error = f"http_status_{response.status}"
                    return AckResult(acked=False, latency_s=latency, error=error), response.status
                ack = _ack_payload(text, response.content_type)
                return AckResult(acked=True, payload=ack, latency_s=latency), response.status
        except TimeoutError:
            return AckResult(acked=False, error="operation_timeout"), None
        except aiohttp.ClientError:
            return AckResult(acked=False, error="dispatch_failed"), None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _ack_payload(text: str, content_type: str) -> dict[str, Any] | None:
    if not text:
        return None
    if content_type == "application/json":
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return {"text": text}
        return parsed if isinstance(parsed, dict) else None
    return {"text": text}
