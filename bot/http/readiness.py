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


def database_write(db: Database) -> str:
    try:
        db.check_write()
    except StorageError as e:
        logger.warning("readiness: database write failed: %s", e)
        return f"database write failed: {e}"
    return ""


class SlackAuth:
    """`auth.test`, remembered for `ttl_s` (a failure too, so a Slack outage is not probed
    harder)."""

    def __init__(
        self,
        client: WebClient,
        *,
        ttl_s: float = SLACK_AUTH_TTL_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._ttl_s = ttl_s
        self._now = now
        self._lock = threading.Lock()
        self._checked_at: float | None = None
        self._reason = ""

    def __call__(self) -> str:
        with self._lock:
            now = self._now()
            if self._checked_at is None or now - self._checked_at >= self._ttl_s:
                self._reason = self._ask()
                self._checked_at = now
            return self._reason

    def _ask(self) -> str:
        try:
            self._client.auth_test()
        except SlackApiError as e:
            error = str(e.response.get("error", "unknown"))
            logger.warning("readiness: slack auth.test failed: %s", error)
            return f"slack auth.test failed: {error}"
        except (SlackClientError, OSError) as e:
            logger.warning("readiness: slack unreachable: %s", e)
            return f"slack unreachable: {type(e).__name__}"
        return ""
