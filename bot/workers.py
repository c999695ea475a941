"""Where the work of a click, a webhook or a timer runs: never in a Slack listener.

`Lanes` runs tasks on a thread pool, one at a time per key and in submission order per key:
the messages of one incident are posted in order while other incidents post in parallel, and
two clicks on one plan are decided one after the other. The task wrapper is an outer
boundary: a task that raises is handed to the failure reporter (log with traceback, a mapped
message for the person who clicked), and the lane goes on.

A task that is not ready yet raises `RunLater(delay)` (a Slack message whose channel slot is
not free: `SlotBusy`). Its lane is *parked*: the task goes back to the head of the lane, the
worker thread goes back to the pool for other lanes, and a timer puts the lane back on the
pool after the delay. Nothing on a lane sleeps, so one busy channel never holds up another's
messages however few workers there are; the lane's later tasks still wait behind the parked
one, so each key's order holds.

`submit_once` is the one coalescer: a sync, a drive or a Home publish reads storage when it
runs, so a second request while the first still waits for its turn adds nothing and is
dropped.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from bot.errors import RunLater

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Who and what a task is for, so a failure can be told to the right person."""

    what: str
    user: str | None = None
    channel: str | None = None
    incident_id: str | None = None


Task = Callable[[], None]
OnError = Callable[[Exception, Origin], None]
#: Call a function after a delay on another thread; returns what cancels it. Never calls
#: back on the caller's thread (the lanes call it holding their lock).
Timer = Callable[[float, Callable[[], None]], Callable[[], None]]


def thread_timer(delay_s: float, fn: Callable[[], None]) -> Callable[[], None]:
    timer = threading.Timer(max(0.0, delay_s), fn)
    timer.daemon = True
    timer.start()
    return timer.cancel


def _log_only(error: Exception, origin: Origin) -> None:
    logger.error("task %s failed", origin.what, exc_info=error)


class Lanes:
    def __init__(
        self,
        *,
        workers: int,
        name: str,
        on_error: OnError = _log_only,
        timer: Timer = thread_timer,
    ) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._on_error = on_error
        self._timer = timer
        self._queues: dict[str, deque[tuple[Task, Origin]]] = {}
        self._parked: dict[str, Callable[[], None]] = {}  # key → cancels its timer
        self._once: set[str] = set()  # `submit_once` names whose task waits for its turn
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False

    def set_error_handler(self, on_error: OnError) -> None:
        self._on_error = on_error

    def submit(self, key: str, task: Task, origin: Origin) -> None:
        with self._lock:
            if self._closed:
                logger.warning("lanes closed; dropping %s", origin.what)
                return
            queue = self._queues.get(key)
            if queue is not None:  # the lane is running: it picks this up in turn
                queue.append((task, origin))
                return
            self._queues[key] = deque([(task, origin)])
        self._pool.submit(self._drain, key)

    def submit_once(self, key: str, task: Task, origin: Origin, *, once: str) -> bool:
        """`submit`, unless a task submitted under the same `once` name still waits for its
        turn: that one will do all this one would. The name is freed as the task starts, so
        a request that comes while it runs queues one more. Whether it was queued."""
        with self._lock:
            if once in self._once:
                return False
            self._once.add(once)

        def run() -> None:
            with self._lock:
                self._once.discard(once)
            task()

        self.submit(key, run, origin)
        return True

    def waiting(self, once: str) -> bool:
        """Whether a task submitted under `once` waits for its turn."""
        with self._lock:
            return once in self._once

    def _drain(self, key: str) -> None:
        while True:
            with self._lock:
                queue = self._queues[key]
                if self._closed and queue:
                    logger.warning("lanes closed; dropping %d task(s) of %s", len(queue), key)
                    queue.clear()
                if not queue:
                    del self._queues[key]
                    self._idle.notify_all()
                    return
                task, origin = queue.popleft()
            try:
                task()
            except RunLater as later:
                with self._lock:
                    if not self._closed:
                        self._queues[key].appendleft((task, origin))
                        self._parked[key] = self._timer(later.delay_s, lambda: self._resume(key))
                        self._idle.notify_all()
                        logger.debug("lane %s parked: %s", key, later)
                        return
                logger.warning("lanes closed; dropping %s (%s)", origin.what, later)
            except Exception as e:  # noqa: BLE001 - the worker boundary: the reporter logs it
                self._on_error(e, origin)

    def _resume(self, key: str) -> None:
        """A parked lane's timer: back on the pool, its parked task first."""
        with self._lock:
            if self._parked.pop(key, None) is None:
                return  # dropped by `close`
        try:
            self._pool.submit(self._drain, key)
        except RuntimeError:  # the pool is shut down
            with self._lock:
                self._queues.pop(key, None)
                self._idle.notify_all()

    def parked(self) -> int:
        """How many lanes wait for their timer (tests)."""
        with self._lock:
            return len(self._parked)

    def wait_settled(self, timeout_s: float) -> bool:
        """Wait until no lane is running or queued for a worker: each is idle or parked
        (tests that drive the timers by hand)."""
        with self._idle:
            return self._idle.wait_for(lambda: set(self._queues) <= set(self._parked), timeout_s)

    def busy(self) -> bool:
        with self._lock:
            return bool(self._queues)

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no lane has work (tests and shutdown)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._queues, timeout_s)

    def close(self, *, timeout_s: float = 10.0) -> None:
        """Refuse new tasks, drop parked lanes at once (what they waited to say is
        re-rendered at the next start), let running lanes finish for up to `timeout_s`,
        then stop."""
        with self._lock:
            self._closed = True
            parked, self._parked = self._parked, {}
            for key, cancel in parked.items():
                cancel()
                dropped = self._queues.pop(key, deque())
                logger.warning("lanes closed; dropping %d parked task(s) of %s", len(dropped), key)
            self._idle.notify_all()
        if not self.wait_idle(timeout_s):
            logger.warning("lanes: work still running after %ss; not waiting longer", timeout_s)
        self._pool.shutdown(wait=False, cancel_futures=True)
