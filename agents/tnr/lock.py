"""The writer lock as the engine uses it: acquire (waiting for a busy scope), keep the lease
alive with a heartbeat, fence every write, release (DESIGN section 3, rules 1 and 8).

The lease lives in storage, so exclusivity holds across processes and replicas. The fencing
token is checked against storage immediately before every write: a holder whose lease lapsed
and was taken over is refused even if it has not noticed yet.

Heartbeat. A lease renewed only from the engine's wait loops lapses whenever one cluster or
metrics call blocks longer than the lease (a stalled API server, retries): recovery then takes
over a transaction whose writer is alive and well. So while the lock is held a daemon thread
renews the lease every third of its TTL, whatever the holder's thread is doing. The lease is
measured on the database's clock (wall time), so the heartbeat waits on wall time too, not on
the agents' `Clock` (which the lab may run faster or step). The heartbeat stops on release; if
a renewal finds the lease taken over, the lock is marked lost and the holder's next `fence()` or
`keepalive()` raises `LockLost`. A holder whose heartbeat cannot reach the database loses the
lease when it expires, like a dead one: `fence()` asks for a third of the lease still left, so a
write starts only if it can finish (every call made under the lock has a deadline of at most a
third of the lease, checked at start-up) before anyone else could take the scope.

A heartbeat must not keep a wedged writer's scope for ever: past `max_hold_s` (the engine
passes 5 Δ: a transaction and its abort each get Δ) it stops renewing, the lease runs out,
recovery may take the scope, and fencing refuses whatever the wedged writer tries afterwards.
"""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType

from agents.deadlines import LEASE_SHARE
from agents.errors import LockLost, StratusError
from agents.model import Scope
from agents.ports import Clock
from agents.tnr.ledger import StorageLedger

logger = logging.getLogger(__name__)


class LockBusy(StratusError):
    """Another writer held the scope for longer than we were willing to wait."""


class WriterLock:
    def __init__(
        self,
        ledger: StorageLedger,
        clock: Clock,
        *,
        scope: Scope,
        holder: str,
        ttl_s: float,
        wait_s: float,
        poll_s: float = 1.0,
        heartbeat: bool = True,
        max_hold_s: float | None = None,
    ) -> None:
        self._ledger = ledger
        self._clock = clock
        self.scope = scope
        self._holder = holder
        self._ttl = ttl_s
        self._wait = wait_s
        self._poll = poll_s
        self._heartbeat_on = heartbeat
        self._max_hold = max_hold_s
        self._token: int | None = None
        self._renewed_at = 0.0
        # Shared with the heartbeat thread: guarded by `_guard`.
        self._guard = threading.Lock()
        self._lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.renewals = 0  # heartbeat renewals that succeeded (read by tests and logs)

    @property
    def holder(self) -> str:
        return self._holder

    @property
    def ttl_s(self) -> float:
        return self._ttl

    @property
    def token(self) -> int:
        with self._guard:
            lost = self._lost
            token = self._token
        if lost is not None:
            raise LockLost(f"writer lock on {self.scope.key} was lost: {lost}")
        if token is None:
            raise LockLost(f"writer lock on {self.scope.key} is not held")
        return token

    @property
    def lost(self) -> str | None:
        """Why the heartbeat found the lease gone, if it did."""
        with self._guard:
            return self._lost

    def acquire(self) -> int:
        started = self._clock.monotonic()
        while True:
            token = self._ledger.acquire_lock(self.scope, self._holder, self._ttl)
            if token is not None:
                with self._guard:
                    self._token = token
                    self._lost = None
                self._renewed_at = self._clock.monotonic()
                logger.info("writer lock on %s acquired, token %d", self.scope.key, token)
                if self._heartbeat_on:
                    self._start_heartbeat(token)
                return token
            if self._clock.monotonic() - started >= self._wait:
                raise LockBusy(f"{self.scope.key} is held by another writer")
            self._clock.sleep(self._poll)

    def keepalive(self) -> None:
        """Call from every wait loop: raises `LockLost` once the heartbeat found the lease
        gone. Without a heartbeat, renews the lease when a third of its TTL has passed."""
        token = self.token
        if self._heartbeat_on:
            return
        now = self._clock.monotonic()
        if now - self._renewed_at >= self._ttl / LEASE_SHARE:
            self._ledger.renew_lock(self.scope, self._holder, token, self._ttl)
            self._renewed_at = now

    def fence(self) -> None:
        """Immediately before a write: our token must still be the current one, with enough of
        the lease left for the write to finish before the lease could lapse."""
        token = self.token
        self._ledger.assert_lock(self.scope, token, min_remaining_s=self._ttl / LEASE_SHARE)
        self.keepalive()

    def release(self) -> None:
        self._stop_heartbeat()
        with self._guard:
            token, self._token = self._token, None
            lost = self._lost
        if token is not None and lost is None:
            self._ledger.release_lock(self.scope, self._holder, token)
            logger.info("writer lock on %s released", self.scope.key)

    # ------------------------------------------------------------------------ heartbeat

    def _start_heartbeat(self, token: int) -> None:
        self._stop_heartbeat()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat,
            args=(token, self._stop),
            name=f"lease-heartbeat {self.scope.key}",
            daemon=True,
        )
        self._thread.start()

    def _stop_heartbeat(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            # A renewal in flight ends within the storage deadlines; do not wait for ever.
            thread.join(timeout=self._ttl)

    def _beat(self, token: int, stop: threading.Event) -> None:
        interval = self._ttl / LEASE_SHARE
        started = time.monotonic()  # wall time, like the lease (see the module doc)
        while not stop.wait(interval):
            held = time.monotonic() - started
            if self._max_hold is not None and held > self._max_hold:
                with self._guard:
                    if self._token == token:
                        self._lost = f"held {held:.0f}s, past its {self._max_hold:.0f}s bound"
                logger.error(
                    "writer lock on %s held %.0fs, past its %.0fs bound: no more renewals; "
                    "the lease will run out and recovery may take the scope",
                    self.scope.key,
                    held,
                    self._max_hold,
                )
                return
            try:
                self._ledger.renew_lock(self.scope, self._holder, token, self._ttl)
            except LockLost as e:
                with self._guard:
                    if self._token == token:
                        self._lost = str(e)
                logger.error("writer lock on %s lost: %s", self.scope.key, e)
                return
            except Exception:  # the thread's outer boundary: log and keep beating
                # The database is unreachable or slow: try again at the next beat. If it stays
                # so, the lease expires, the next renewal says so, and `fence()` refuses writes.
                logger.exception("writer lock on %s: renewal failed", self.scope.key)
                continue
            self.renewals += 1

    # -------------------------------------------------------------------- context manager

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
            self._stop_heartbeat()
            with self._guard:
                self._token = None  # someone else holds it now; releasing would be wrong
            return
        self.release()
