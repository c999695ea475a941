"""Callbacks at a lab time: how a time-bounded fault ends itself, as a chaos experiment's
controller does when its duration is over.

With a stepped clock the timers fire from the clock's tick (in the thread that advances time,
so runs stay deterministic); with a running clock a daemon thread sleeps until the next one is
due and exits when none is left. One `LabTimers` per clock (`timers_for`).

Nothing global keeps a clock — or the world its pending callbacks reach — alive: the registry
holds its clocks and their timers weakly. What keeps a `LabTimers` alive is what must fire it:
a stepped clock's tick list (a cycle clock → timers → callbacks → world → clock that the
garbage collector frees with the world), or a running clock's timer thread while a timer is
pending. A registry holding the timers strongly would hold their clock through them, and every
world that ever used a timer would stay in memory (~10 MB a bench run).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import weakref
from collections.abc import Callable
from datetime import datetime

from lab.clock import LabClock

logger = logging.getLogger(__name__)

_MAX_WAIT_S = 1.0  # wall seconds between checks: the clock's speed could change under us


class LabTimers:
    def __init__(self, clock: LabClock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._heap: list[tuple[datetime, int, str, Callable[[], None]]] = []
        self._sequence = itertools.count()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        if clock.stepped:
            clock.on_tick(self._on_tick)

    def call_at(self, when: datetime, callback: Callable[[], None], *, name: str) -> None:
        with self._lock:
            heapq.heappush(self._heap, (when, next(self._sequence), name, callback))
            if not self._clock.stepped and self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="lab-fault-timers", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def pending(self) -> list[tuple[datetime, str]]:
        with self._lock:
            return sorted((when, name) for when, _, name, _ in self._heap)

    def _on_tick(self, now: datetime) -> None:
        self.fire_due(now)

    def fire_due(self, now: datetime) -> int:
        """Run every callback due at `now`; returns how many ran."""
        ran = 0
        while True:
            with self._lock:
                if not self._heap or self._heap[0][0] > now:
                    return ran
                _, _, name, callback = heapq.heappop(self._heap)
            try:
                callback()
            except Exception:  # a timer is an outer boundary: log it, keep the lab running
                logger.exception("lab timer %s failed", name)
            ran += 1

    def _run(self) -> None:
        while True:
            self.fire_due(self._clock.now())
            with self._lock:
                if not self._heap:
                    self._thread = None
                    return
                due = self._heap[0][0]
            wait = (due - self._clock.now()).total_seconds() / self._clock.speed
            self._wake.clear()
            self._wake.wait(min(max(wait, 0.0), _MAX_WAIT_S))


#: clock → its timers, both weak: the value must not keep the key alive (see the docstring).
_TIMERS: weakref.WeakKeyDictionary[LabClock, weakref.ref[LabTimers]] = weakref.WeakKeyDictionary()
_TIMERS_LOCK = threading.Lock()


def timers_for(clock: LabClock) -> LabTimers:
    """The clock's timers. Hold the result only as long as you use it."""
    with _TIMERS_LOCK:
        held = _TIMERS.get(clock)
        timers = held() if held is not None else None
        if timers is None:
            # None yet, or the last one was freed with nothing pending (a running clock's
            # timers live only while their thread does): a fresh one loses nothing.
            timers = LabTimers(clock)
            _TIMERS[clock] = weakref.ref(timers)
        return timers
