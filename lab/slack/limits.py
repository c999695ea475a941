"""The record of Web API calls, and the rate limits a test can switch on.

Slack answers a rate-limited call with HTTP 429, `{"ok": false, "error": "ratelimited"}` and a
`Retry-After` header in whole seconds. Two ways to meet that here: inject 429s for the next N
calls of a method (deterministic, for retry tests), or enforce Slack's posting limit of about
one message per second per channel (a token bucket per channel, for pacing tests).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiCall:
    """One Web API call as the workspace saw it (the token itself is never recorded)."""

    method: str
    args: dict[str, Any]
    token_kind: str  # "bot", "user", "app", or "" when unauthenticated
    at: float  # workspace clock, seconds since the epoch
    status: int
    ok: bool
    error: str = ""


class CallLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[ApiCall] = []

    def add(self, call: ApiCall) -> None:
        with self._lock:
            self._calls.append(call)

    def list(self, method: str | None = None) -> list[ApiCall]:
        with self._lock:
            return [c for c in self._calls if method is None or c.method == method]


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """Decides whether a call is answered with 429, and with which Retry-After."""

    POSTING_METHODS = frozenset(("chat.postMessage", "chat.postEphemeral"))

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._injected: dict[str, list[int]] = {}  # method → [remaining, retry_after]
        self._per_second: float | None = None
        self._burst = 1
        self._buckets: dict[str, _Bucket] = {}

    def inject(self, method: str, *, count: int = 1, retry_after: int = 1) -> None:
        """Answer the next `count` calls of `method` with 429 and `Retry-After: retry_after`."""
        with self._lock:
            self._injected[method] = [count, retry_after]

    def set_posting_limit(self, per_second: float | None, *, burst: int = 1) -> None:
        """Limit posts per channel (None switches the limit off)."""
        with self._lock:
            self._per_second = per_second
            self._burst = max(1, burst)
            self._buckets.clear()

    def check(self, method: str, channel: str | None) -> int | None:
        """Retry-After seconds when this call is to be refused, else None."""
        with self._lock:
            injected = self._injected.get(method)
            if injected is not None and injected[0] > 0:
                injected[0] -= 1
                return injected[1]
            if self._per_second is None or method not in self.POSTING_METHODS or not channel:
                return None
            now = time.monotonic()
            bucket = self._buckets.setdefault(channel, _Bucket(float(self._burst), now))
            bucket.tokens = min(
                float(self._burst), bucket.tokens + (now - bucket.stamp) * self._per_second
            )
            bucket.stamp = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return max(1, math.ceil((1.0 - bucket.tokens) / self._per_second))
