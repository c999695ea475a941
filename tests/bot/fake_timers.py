"""A fake clock and the `Lanes` timer that goes with it: a parked lane resumes only when the
test moves the clock past its time, so tests of pacing assert order, never durations."""

from __future__ import annotations

import threading
from collections.abc import Callable


class FakeTimers:
    def __init__(self) -> None:
        self.now = 0.0
        self._due: list[tuple[float, Callable[[], None]]] = []
        self._lock = threading.Lock()

    def clock(self) -> float:
        return self.now

    def __call__(self, delay_s: float, fn: Callable[[], None]) -> Callable[[], None]:
        entry = (self.now + delay_s, fn)
        with self._lock:
            self._due.append(entry)

        def cancel() -> None:
            with self._lock:
                if entry in self._due:
                    self._due.remove(entry)

        return cancel

    def pending(self) -> list[float]:
        """When the timers set so far are due, earliest first."""
        with self._lock:
            return sorted(at for at, _ in self._due)

    def advance(self, seconds: float) -> None:
        """Move the clock and fire every timer now due (each on its own, as a real one)."""
        self.now += seconds
        with self._lock:
            due = [e for e in self._due if e[0] <= self.now]
            self._due = [e for e in self._due if e[0] > self.now]
        for _, fn in sorted(due, key=lambda e: e[0]):
            fn()
