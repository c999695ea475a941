"""`AlertForwarder`: deliver the lab's Alertmanager payloads to a webhook the way a separate
Alertmanager process would — asynchronously, retrying until the receiver takes them.

The in-process evaluator runs in the simulator's tick thread; posting from there would stall
the lab whenever the receiver is slow or not listening yet (a bot still starting). The
forwarder queues each payload and a thread of its own delivers it: a 2xx or a 4xx ends the
attempts (Alertmanager does not retry a 4xx either), a 5xx or a connection error is retried.
With `token` it authenticates as Alertmanager's `http_config.authorization` does (Bearer).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from typing import Any

logger = logging.getLogger(__name__)


class AlertForwarder:
    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        attempts: int = 60,
        pause_s: float = 0.5,
    ) -> None:
        self.url = url
        self.token = token
        self.delivered = 0
        self.failed = 0
        self._attempts = attempts
        self._pause_s = pause_s
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="lab-alert-forwarder", daemon=True)
        self._thread.start()

    def __call__(self, payload: dict[str, Any]) -> None:
        """The `Send` the lab's `WebhookNotifier` calls: queue it and return at once."""
        self._queue.put(payload)

    def _run(self) -> None:
        while True:
            payload = self._queue.get()
            if payload is None:
                return
            for _ in range(self._attempts):
                if self._post(payload):
                    break
                time.sleep(self._pause_s)
            else:
                self.failed += 1
                logger.warning("gave up delivering an alert notification to %s", self.url)

    def _post(self, payload: dict[str, Any]) -> bool:
        if self.url is None:
            return False  # nobody listening yet: keep it for later
        request = urllib.request.Request(  # noqa: S310 - the webhook URL we were given
            self.url,
            data=json.dumps(payload).encode(),
            method="POST",
            headers=_headers(self.token),
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                ok = bool(200 <= response.status < 300)
        except urllib.error.HTTPError as e:
            if e.code < 500:
                logger.warning("%s refused an alert notification: HTTP %d", self.url, e.code)
                return True
            return False
        except OSError:
            return False
        if ok:
            self.delivered += 1
        return ok

    def stop(self, timeout_s: float = 5.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout_s)


def _headers(token: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "User-Agent": "Alertmanager/0.25.0"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers
