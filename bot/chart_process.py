"""Charts drawn in a child process, so that the bot never loads matplotlib.

Drawing the first chart in the bot's own process grew it by about 50 MB (matplotlib, numpy,
fonts, the Agg renderer), for good: Python does not give imported modules back. The bot runs
for weeks beside a large cluster cache, so the drawing lives in one child process instead,
`python -m bot.chart_worker` (see that module for the wire), and the bot keeps only the PNG.

* The child is spawned on the first chart, not at start: a bot that never draws never pays.
* One child, reused; one chart at a time through it (a lock), which is what the drawing needed
  anyway (matplotlib's rcParams are global).
* Every chart has a deadline (`timeout_s`, a safety net: a chart takes ~0.1 s, the child's
  first start ~1-2 s). A child that misses it, dies, or breaks the wire is killed and reaped,
  and the chart raises `ChartFailed`; the next chart starts a new child. Callers post their
  message without the chart, as they did when the drawing itself failed.
* The child gets no settings: argv is the interpreter and the module, and its environment is
  `bot.config.child_environment()` (paths, locale, caches — no token, no database URL). It
  runs in its own session, so a Ctrl-C meant for the bot does not print its traceback; if the
  bot dies, the child reads the end of its stdin and exits.
* `close()` ends the child (end of stdin, then a kill if it lingers) and reaps it, so no
  zombie is left behind; `Services.close()` calls `close_charts()`.

`charts()` is the process's renderer, a `ChartProcess` made on first use; `use_charts()`
swaps it (an `InProcessCharts` for a test that wants no child, or a benchmark's).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Protocol

from agents.model import Series
from bot.chart_worker import (
    FAILED,
    HEADER_SIZE,
    OK,
    WireError,
    digest_request,
    draw,
    frame,
    frame_length,
    signal_request,
)
from bot.charts import MAX_SERIES, Marker, NamespaceFigures
from bot.config import child_environment
from bot.errors import ChartFailed

#: Seconds a chart may take, the child's start included: a safety net, not a budget.
DEFAULT_TIMEOUT_S = 30.0


class _Gone(ChartFailed):
    """The child closed its end: it exited (or was killed) before answering."""


class ChartRenderer(Protocol):
    """Draws the bot's charts as PNG bytes. Raises `ChartFailed` when a chart is not drawn."""

    def signal_chart(
        self,
        series: Sequence[Series],
        *,
        title: str,
        markers: Sequence[Marker] = (),
        unit: str = "",
    ) -> bytes: ...

    def digest_chart(self, rows: Sequence[NamespaceFigures], *, title: str) -> bytes: ...

    def close(self) -> None: ...


def _drawn(series: Sequence[Series]) -> list[Series]:
    """What `render_signal_chart` draws of `series`; the rest need not cross the pipe."""
    return [s for s in series if s.points][:MAX_SERIES]


class _Requests:
    """Both renderers: build the request, then `_answer` it (here or in the child)."""

    def signal_chart(
        self,
        series: Sequence[Series],
        *,
        title: str,
        markers: Sequence[Marker] = (),
        unit: str = "",
    ) -> bytes:
        return self._answer(signal_request(_drawn(series), title=title, markers=markers, unit=unit))

    def digest_chart(self, rows: Sequence[NamespaceFigures], *, title: str) -> bytes:
        return self._answer(digest_request(rows, title=title))

    def _answer(self, request: bytes) -> bytes:
        raise NotImplementedError


class InProcessCharts(_Requests):
    """Draws in this process (matplotlib loaded here): for tests and measurements."""

    def _answer(self, request: bytes) -> bytes:
        try:
            return draw(request)
        except ValueError as e:
            raise ChartFailed(f"chart not drawn: {e}") from e

    def close(self) -> None:
        pass


class ChartProcess(_Requests):
    """Draws in a child process (`python -m bot.chart_worker`), spawned on the first chart."""

    def __init__(
        self,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        command: Sequence[str] | None = None,
    ) -> None:
        self.timeout_s = timeout_s  #: per chart, the child's start included
        self._command = list(command or (sys.executable, "-m", "bot.chart_worker"))
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The running child's process id (None before the first chart or after a failure)."""
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    def close(self) -> None:
        """End the child and reap it, after the chart in progress if any (at most its
        deadline). Idempotent; a chart asked for afterwards starts a new child (a straggling
        lane must not fail because the bot is shutting down)."""
        with self._lock:
            self._stop(gently=True)

    def _answer(self, request: bytes) -> bytes:
        deadline = time.monotonic() + self.timeout_s
        if not self._lock.acquire(timeout=self.timeout_s):
            raise ChartFailed(f"the chart worker stayed busy for {self.timeout_s:g} s")
        try:
            answer = self._attempt(frame(request), deadline)
        finally:
            self._lock.release()
        status, body = answer[:1], answer[1:]
        if status == OK:
            return body
        if status == FAILED:
            raise ChartFailed(f"chart not drawn: {body.decode(errors='replace')}")
        raise ChartFailed("chart not drawn: the worker answered nonsense")

    def _attempt(self, request: bytes, deadline: float) -> bytes:
        """One exchange; a second with a new child when the reused one turns out to have died
        since the last chart (killed, out of memory) before it read this request."""
        reused = self._child is not None and self._child.poll() is None
        try:
            return self._exchange(self._running(), request, deadline)
        except _Gone as e:
            self._stop(gently=False)
            if not reused:
                raise ChartFailed(f"chart not drawn: {e}") from e
        except (OSError, WireError, ChartFailed) as e:
            self._stop(gently=False)  # a broken or late child: the next chart starts anew
            raise ChartFailed(f"chart not drawn: {e}") from e
        try:
            return self._exchange(self._running(), request, deadline)
        except (OSError, WireError, ChartFailed) as e:
            self._stop(gently=False)
            raise ChartFailed(f"chart not drawn: {e}") from e

    def _running(self) -> subprocess.Popen[bytes]:
        if self._child is not None and self._child.poll() is None:
            return self._child
        self._stop(gently=False)  # reap a child that died since the last chart
        child = subprocess.Popen(  # noqa: S603 - our interpreter, our module, no input
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=child_environment(),
            close_fds=True,
            start_new_session=True,
        )
        assert child.stdin is not None and child.stdout is not None
        os.set_blocking(child.stdin.fileno(), False)
        self._child = child
        return child

    @staticmethod
    def _exchange(child: subprocess.Popen[bytes], request: bytes, deadline: float) -> bytes:
        """Write `request`, read one answer frame; both under `deadline` (a child that stops
        reading cannot block the write either)."""
        assert child.stdin is not None and child.stdout is not None
        out, into = child.stdin.fileno(), child.stdout.fileno()
        pending = memoryview(request)
        received = bytearray()
        needed: int | None = None
        with selectors.DefaultSelector() as selector:
            selector.register(out, selectors.EVENT_WRITE)
            selector.register(into, selectors.EVENT_READ)
            while needed is None or len(received) < needed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ChartFailed("the chart worker did not answer in time")
                for key, _ in selector.select(remaining):
                    if key.fd == out:
                        try:
                            pending = pending[os.write(out, pending) :]
                        except BlockingIOError:
                            continue
                        except (BrokenPipeError, ConnectionResetError) as e:
                            raise _Gone("the chart worker exited") from e
                        if not pending:
                            selector.unregister(out)
                    else:
                        chunk = os.read(into, 1 << 16)
                        if not chunk:
                            raise _Gone("the chart worker exited")
                        received += chunk
                if needed is None and len(received) >= HEADER_SIZE:
                    needed = HEADER_SIZE + frame_length(bytes(received[:HEADER_SIZE]))
        if len(received) != needed:
            raise WireError("the chart worker answered more than one frame")
        return bytes(received[HEADER_SIZE:])

    def _stop(self, *, gently: bool) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        assert child.stdin is not None and child.stdout is not None
        with contextlib.suppress(OSError):
            child.stdin.close()  # the end of its requests: a healthy child exits by itself
        try:
            child.wait(timeout=5.0 if gently else 0.0)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        child.stdout.close()


class _Slot:
    """The process's renderer, behind a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.renderer: ChartRenderer | None = None


_PROCESS = _Slot()


def charts() -> ChartRenderer:
    """The process's chart renderer: a `ChartProcess`, made on first use."""
    with _PROCESS.lock:
        if _PROCESS.renderer is None:
            _PROCESS.renderer = ChartProcess()
        return _PROCESS.renderer


def use_charts(renderer: ChartRenderer | None) -> ChartRenderer | None:
    """Make `renderer` the process's renderer (None: a new `ChartProcess` on next use);
    returns the previous one, not closed."""
    with _PROCESS.lock:
        previous, _PROCESS.renderer = _PROCESS.renderer, renderer
        return previous


def close_charts() -> None:
    """Close the process's renderer: its child ends (a later chart starts another)."""
    with _PROCESS.lock:
        renderer = _PROCESS.renderer
    if renderer is not None:
        renderer.close()


atexit.register(close_charts)  # a safety net: `Services.close()` closes it first
