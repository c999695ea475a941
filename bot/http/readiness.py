"""What `/readyz` checks: that the bot can act, not only that it runs — a database *write*
(reads can succeed while every write fails: a lock held elsewhere, a read-only replica, a
full disk) and Slack accepting the bot token (`auth.test`, cached so a probe every few
seconds costs Slack one call per `SLACK_AUTH_TTL_S`).

Each check answers `""` when fine, else the reason, which `/readyz` returns with its 503.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from storage import Database, StorageError

logger = logging.getLogger(__name__)

SLACK_AUTH_TTL_S = 30.0
#: How long a *transient* auth.test failure (unreachable, HTTP 5xx or 429) is remembered: one
#: 503 kept /readyz failing for the whole TTL, taking a healthy replica out of service for
#: 30 s per blip (the transient-fault matrix, issue 14). A refused token is an answer, and is
#: remembered for the TTL.
SLACK_AUTH_RETRY_S = 5.0


def database_write(db: Database) -> str:
    try:
        db.check_write()
    except StorageError as e:
        logger.warning("readiness: database write failed: %s", e)
        return f"database write failed: {e}"
    return ""


class SlackAuth:
    """`auth.test`, remembered for `ttl_s` (a refused token too); a transient failure for
    `retry_s`, so a Slack outage is probed at most that often and a blip passes quickly."""

    def __init__(
        self,
        client: WebClient,
        *,
        ttl_s: float = SLACK_AUTH_TTL_S,
        retry_s: float = SLACK_AUTH_RETRY_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._ttl_s = ttl_s
        self._retry_s = min(retry_s, ttl_s)
        self._remember_s = ttl_s
        self._now = now
        self._lock = threading.Lock()
        self._checked_at: float | None = None
        self._reason = ""

    def __call__(self) -> str:
        with self._lock:
            now = self._now()
            if self._checked_at is None or now - self._checked_at >= self._remember_s:
                self._reason, transient = self._ask()
                self._remember_s = self._retry_s if transient else self._ttl_s
                self._checked_at = now
            return self._reason

    def _ask(self) -> tuple[str, bool]:
        """(reason or "", whether the failure is transient)."""
        try:
            self._client.auth_test()
        except SlackApiError as e:
            error = str(e.response.get("error", "unknown"))
            logger.warning("readiness: slack auth.test failed: %s", error)
            status = e.response.status_code
            return f"slack auth.test failed: {error}", status >= 500 or status == 429
        except (SlackClientError, OSError) as e:
            logger.warning("readiness: slack unreachable: %s", e)
            return f"slack unreachable: {type(e).__name__}", True
        return "", False
