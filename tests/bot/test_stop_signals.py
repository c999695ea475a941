"""`StopSignals`: SIGTERM ends `stratus run` and `stratus lab up` even when it lands while the main
thread is inside `Event.wait` holding the event's lock (the hang a clean-clone CI run saw)."""

from __future__ import annotations

import os
import signal
import threading
import time

from bot.cli.common import StopSignals


def test_a_signal_landing_while_the_main_thread_holds_the_events_lock_does_not_hang() -> None:
    stop = StopSignals()
    finished = threading.Event()

    def deliver() -> None:
        # What the interpreter does when a signal arrives between two bytecodes of Event.wait:
        # run the handler on the thread that holds the event's lock.
        with stop._event._cond:  # type: ignore[attr-defined]
            stop._on_signal(signal.SIGTERM, None)
        finished.set()

    worker = threading.Thread(target=deliver, daemon=True)
    worker.start()
    assert finished.wait(5), "the handler waited for a lock its own thread holds"
    assert stop.signum == signal.SIGTERM
    started = time.monotonic()
    stop.wait()
    assert time.monotonic() - started < 1


def test_sigterm_ends_the_wait_and_the_previous_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    stop = StopSignals(poll_s=0.05)
    stop.install()
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        stop.wait()
        assert stop.signum == signal.SIGTERM
    finally:
        stop.restore()
    assert signal.getsignal(signal.SIGTERM) == before


def test_stop_from_another_thread_ends_the_wait_without_a_signal() -> None:
    stop = StopSignals()
    threading.Timer(0.1, stop.stop).start()
    stop.wait()
    assert stop.signum is None
