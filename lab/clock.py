"""Lab time.

The lab runs on its own clock so that the demo can run in real time, tests can run it faster
than real time, and the bench can step it deterministically (same seed, same scores). The
clock implements the agents' `Clock` port, so the incident loop waits on lab time too.

Two modes:

* **running**: lab time follows the wall clock multiplied by `speed`; `sleep` waits for the
  equivalent wall time. The lab's background thread reconciles on its own.
* **stepped**: lab time only moves when someone calls `sleep` or `advance`; each step runs
  the registered tick callbacks (the lab's controllers and simulator) in increments of at most
  `tick_s`, in the caller's thread. Nothing else moves time, which makes runs reproducible.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

#: Lab time starts at a fixed instant so that runs are reproducible and readable in reports.
LAB_EPOCH = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)

TickCallback = Callable[[datetime], None]


class LabClock:
    def __init__(
        self,
        *,
        start: datetime = LAB_EPOCH,
        speed: float = 1.0,
        stepped: bool = False,
        tick_s: float = 1.0,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self._start = start
        self._speed = speed
        self._stepped = stepped
        self._tick_s = tick_s
        self._offset_s = 0.0  # lab seconds since start (stepped mode)
        self._wall_start = time.monotonic()
        self._callbacks: list[TickCallback] = []
        self._lock = threading.RLock()

    @property
    def stepped(self) -> bool:
        return self._stepped

    @property
    def speed(self) -> float:
        return self._speed

    def elapsed(self) -> float:
        """Lab seconds since the clock started."""
        if self._stepped:
            return self._offset_s
        return (time.monotonic() - self._wall_start) * self._speed

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self.elapsed())

    def time(self) -> float:
        """Lab time as seconds since the Unix epoch."""
        return self.now().timestamp()

    def monotonic(self) -> float:
        return self.elapsed()

    def on_tick(self, callback: TickCallback) -> None:
        """Register a callback run at every step (stepped mode only)."""
        with self._lock:
            self._callbacks.append(callback)

    def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            if self._stepped:
                self.advance(0.0)
            return
        if self._stepped:
            self.advance(seconds)
        else:
            time.sleep(seconds / self._speed)

    def advance(self, seconds: float, *, tick_s: float | None = None) -> None:
        """Move stepped time forward, running the tick callbacks at each step (of the
        clock's tick, or of `tick_s` for this call)."""
        if not self._stepped:
            raise RuntimeError("advance() is only for a stepped clock")
        tick = self._tick_s if tick_s is None else tick_s
        if tick <= 0:
            raise ValueError("tick_s must be positive")
        with self._lock:
            remaining = seconds
            while True:
                step = min(tick, remaining)
                self._offset_s += step
                remaining -= step
                now = self.now()
                for callback in list(self._callbacks):
                    callback(now)
                if remaining <= 1e-9:
                    break
