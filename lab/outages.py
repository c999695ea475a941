"""Outages a run can switch on: a fault-injecting TCP proxy in front of a Kubernetes API (or any
TCP service), and a metrics source that can go down. The bench's `--chaos` and the end-to-end
outage tests use the same two.

`FaultProxy` sits between a client and its upstream (the client's kubeconfig names the proxy).
It listens on 127.0.0.1, port 0, one thread per connection, and its mode can be switched while
the client runs:

* `PASS`: bytes flow both ways unchanged;
* `REFUSE`: new connections are reset at once (SO_LINGER 0) and open ones are cut, as an API
  server that is down or a load balancer with no backend;
* `STALL`: connections are accepted but nothing is forwarded until the stall ends (the
  bytes wait, then flow), as an API server stuck behind a full queue — a caller without a
  deadline blocks for the whole stall;
* `SLOW`: every request's first bytes are held `delay_s` before they are forwarded.

Beside the mode, `Injection`s can be armed (the transient-fault harness, issue 14): the
first bytes of each request (the first client chunk after a response: an HTTP request line,
or a PostgreSQL Query/Parse message with its SQL) are offered to its `match`; the first
`count` requests that match are not forwarded and get the fault instead — `HANG` (no answer
until the client gives up, or `hang_s` then a reset), `RESET` (RST at once) or `RESPOND`
(canned bytes, e.g. an HTTP 503 or 429 with Retry-After, then close). Later matching
requests pass and are counted, so a harness can say how long the caller took to get through.

The lab's metrics are evaluated in process (`lab.alerts` hands the bot a `MetricsSource`, not
a PromQL URL), so "Prometheus down" is `SwitchableMetrics`: while down, every call raises the
`MetricsError` that `PrometheusMetrics` raises when its server refuses connections.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from agents.errors import MetricsUnavailable
from agents.ports import MetricsSource


class Action(StrEnum):
    HANG = "hang"
    RESET = "reset"
    RESPOND = "respond"


@dataclass
class Injection:
    """A transient fault: the first `count` requests `match` accepts fail with `action`."""

    match: Callable[[bytes], bool]
    action: Action
    count: int = 1
    response: bytes = b""
    hang_s: float = 8.0
    on_fault: Callable[[], None] | None = None  # called at each faulted request
    faulted: list[float] = field(default_factory=list)  # monotonic times
    passed: list[float] = field(default_factory=list)  # matching requests forwarded after

    def take(self, first_bytes: bytes) -> bool:
        """True if this request is to fail (and count it); records passes after the faults."""
        if not self.match(first_bytes):
            return False
        if len(self.faulted) < self.count:
            self.faulted.append(time.monotonic())
            if self.on_fault is not None:
                self.on_fault()
            return True
        self.passed.append(time.monotonic())
        return False


class Mode(StrEnum):
    PASS = "pass"  # noqa: S105 - a mode, not a password
    REFUSE = "refuse"
    STALL = "stall"
    SLOW = "slow"


def _reset(conn: socket.socket) -> None:
    """Close with RST, not FIN: the client sees 'connection reset', as from a dead server."""
    with contextlib.suppress(OSError):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        conn.close()


class FaultProxy:
    """A TCP proxy to `upstream` (host, port) whose behaviour is switched at run time."""

    def __init__(self, upstream: tuple[str, int], *, slow_delay_s: float = 5.0) -> None:
        self.upstream = upstream
        self.slow_delay_s = slow_delay_s
        self._mode = Mode.PASS
        self._changed = threading.Condition()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.connections = 0
        self.refused = 0
        self.injections: list[Injection] = []  # armed transient faults (the first takes)
        self._thread = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mode(self) -> Mode:
        return self._mode

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def set_mode(self, mode: Mode) -> None:
        with self._changed:
            self._mode = mode
            self._changed.notify_all()
        if mode is Mode.REFUSE:
            with self._lock:
                open_now = list(self._open)
            for conn in open_now:
                _reset(conn)

    def stop(self) -> None:
        self._stopped.set()
        self.set_mode(Mode.PASS)
        with contextlib.suppress(OSError):  # wakes the blocked accept() (close alone does not)
            self._server.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._server.close()
        with self._lock:
            open_now = list(self._open)
        for conn in open_now:
            with contextlib.suppress(OSError):
                conn.close()
        self._thread.join(5)

    # ------------------------------------------------------------------ plumbing

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self._mode is Mode.REFUSE:
                self.refused += 1
                _reset(client)
                continue
            self.connections += 1
            threading.Thread(
                target=self._serve, args=(client,), name="fault-proxy-conn", daemon=True
            ).start()

    def _refusing(self) -> bool:
        return self._mode is Mode.REFUSE

    def _wait_while_stalled(self) -> None:
        with self._changed:
            while self._mode is Mode.STALL and not self._stopped.is_set():
                self._changed.wait(0.1)

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            _reset(client)
            return
        with self._lock:
            self._open.update((client, upstream))
        try:
            self._pump(client, upstream)
        finally:
            with self._lock:
                self._open.discard(client)
                self._open.discard(upstream)
            for s in (client, upstream):
                with contextlib.suppress(OSError):
                    s.close()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        awaiting_request = True  # the next client bytes start a request (keep-alive aware)
        while not self._stopped.is_set():
            if self._refusing():
                return
            try:
                readable, _, _ = select.select([client, upstream], [], [], 0.2)
            except (OSError, ValueError):
                return
            for source in readable:
                self._wait_while_stalled()
                if self._refusing():  # switched while we waited
                    return
                try:
                    data = source.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                if source is client:
                    if awaiting_request and self._inject(client, data):
                        return
                    if awaiting_request and self._mode is Mode.SLOW:
                        time.sleep(self.slow_delay_s)
                    awaiting_request = False
                    target = upstream
                else:
                    awaiting_request = True
                    target = client
                try:
                    target.sendall(data)
                except OSError:
                    return

    def _inject(self, client: socket.socket, first_bytes: bytes) -> bool:
        """Apply the armed injection to a request; True if it was faulted (not forwarded)."""
        with self._lock:
            injection = next((i for i in self.injections if i.take(first_bytes)), None)
        if injection is None:
            return False
        if injection.action is Action.RESET:
            _reset(client)
        elif injection.action is Action.RESPOND:
            with contextlib.suppress(OSError):
                client.sendall(injection.response)
                client.shutdown(socket.SHUT_WR)
        else:  # HANG: swallow what the client sends until it gives up, or reset at hang_s
            deadline = time.monotonic() + injection.hang_s
            while not self._stopped.is_set() and (left := deadline - time.monotonic()) > 0:
                try:
                    readable, _, _ = select.select([client], [], [], min(left, 0.2))
                    if readable and not client.recv(65536):
                        return True  # the client timed out and closed
                except (OSError, ValueError):
                    return True
            _reset(client)
        return True


class SwitchableMetrics:
    """A `MetricsSource` that forwards to `inner` until `down` is set."""

    def __init__(self, inner: MetricsSource) -> None:
        self.inner = inner
        self.down = False
        self.refused = 0

    def _check(self) -> None:
        if self.down:
            self.refused += 1
            raise MetricsUnavailable(
                "Prometheus at http://prometheus.lab:9090 is unreachable: connection refused"
            )

    def golden_signals(
        self, namespace: str, services: Sequence[str] | None = None, *, window_s: int = 60
    ) -> Mapping[str, Any]:
        self._check()
        return self.inner.golden_signals(namespace, services, window_s=window_s)

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Any]:
        self._check()
        return self.inner.firing_alerts(namespace)

    def series(
        self, namespace: str, service: str, signal: str, *, start: datetime, end: datetime
    ) -> Sequence[Any]:
        self._check()
        return self.inner.series(namespace, service, signal, start=start, end=end)

    def call_graph(self, namespace: str, *, window_s: int = 300) -> Sequence[tuple[str, str]]:
        self._check()
        return self.inner.call_graph(namespace, window_s=window_s)

    def query(self, promql: str) -> Sequence[Any]:
        self._check()
        return self.inner.query(promql)
