"""The writer lock as the engine uses it: acquire (waiting for a busy scope), keep alive while
waiting on the cluster, fence every write, release (DESIGN section 3, rule 1).

The lease lives in storage, so exclusivity holds across processes and replicas. The fencing
token is checked against storage immediately before every write: a holder whose lease lapsed
and was taken over is refused even if it has not noticed yet.
"""

from __future__ import annotations

import logging
from types import TracebackType

from agents.errors import LockLost, StratusError
from agents.model import Scope
from agents.ports import Clock
from agents.tnr.ports import Ledger

logger = logging.getLogger(__name__)


class LockBusy(StratusError):
    """Another writer held the scope for longer than we were willing to wait."""


class WriterLock:
    def __init__(
        self,
        ledger: Ledger,
        clock: Clock,
        *,
        scope: Scope,
        holder: str,
        ttl_s: float,
        wait_s: float,
        poll_s: float = 1.0,
    ) -> None:
        self._ledger = ledger
        self._clock = clock
        self.scope = scope
        self._holder = holder
        self._ttl = ttl_s
        self._wait = wait_s
        self._poll = poll_s
        self._token: int | None = None
        self._renewed_at = 0.0

    @property
    def token(self) -> int:
        if self._token is None:
            raise LockLost(f"writer lock on {self.scope.key} is not held")
        return self._token

    def acquire(self) -> int:
        started = self._clock.monotonic()
        while True:
            token = self._ledger.acquire_lock(self.scope, self._holder, self._ttl)
            if token is not None:
                self._token = token
                self._renewed_at = self._clock.monotonic()
                logger.info("writer lock on %s acquired, token %d", self.scope.key, token)
                return token
            if self._clock.monotonic() - started >= self._wait:
                raise LockBusy(f"{self.scope.key} is held by another writer")
            self._clock.sleep(self._poll)

    def keepalive(self) -> None:
        """Renew the lease when a third of its TTL has passed. Call from every wait loop."""
        now = self._clock.monotonic()
        if now - self._renewed_at >= self._ttl / 3:
            self._ledger.renew_lock(self.scope, self._holder, self.token, self._ttl)
            self._renewed_at = now

    def fence(self) -> None:
        """Immediately before a write: our token must still be the current one."""
        self._ledger.assert_lock(self.scope, self.token)
        self.keepalive()

    def release(self) -> None:
        if self._token is not None:
            self._ledger.release_lock(self.scope, self._holder, self._token)
            logger.info("writer lock on %s released", self.scope.key)
            self._token = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(exc, LockLost):
            self._token = None  # someone else holds it now; releasing would be wrong
            return
        self.release()
