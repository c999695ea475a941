"""What the CLI's commands share."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from functools import wraps
from types import FrameType
from typing import ParamSpec, TypeVar

import click

from bot.config import SettingsError

P = ParamSpec("P")
R = TypeVar("R")

EXIT_USAGE = 2


def settings_errors_exit_2(func: Callable[P, R]) -> Callable[P, R]:
    """Turn a `SettingsError` into one line on stderr and exit code 2."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except SettingsError as e:
            click.echo(f"stratus: invalid setting {e}", err=True)
            sys.exit(EXIT_USAGE)

    return wrapper


class StopSignals:
    """SIGINT and SIGTERM, or `stop()` from any thread, end the main thread's `wait()`.

    A signal handler runs in the main thread between two of its bytecodes, possibly while that
    thread holds the lock inside `threading.Event.wait`: a handler that called `Event.set()`
    would then wait for a lock its own thread holds, for ever (a clean-clone CI run saw `stratus
    run` ignore a SIGTERM that way). So the handler only records the signal, which takes no lock,
    and `wait()` polls for it.
    """

    def __init__(self, *, poll_s: float = 0.2) -> None:
        self.signum: int | None = None
        self._event = threading.Event()
        self._poll_s = poll_s
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def stop(self) -> None:
        """From another thread (never from a signal handler)."""
        self._event.set()

    def wait(self) -> None:
        while self.signum is None and not self._event.wait(self._poll_s):
            pass

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.signum = signum
