"""Log lines as the simulated programs write them, and the rate limit that keeps them bounded.

Lines carry their own timestamp (lab time) like real apps do. Errors repeat at most once per
`interval_s` per (process, message), the way a real service's log sampling or a human reading
`kubectl logs` sees them: the first occurrence at once, then a steady trickle.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime

from lab.sim.model import Wire

logger = logging.getLogger(__name__)


def stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def line(now: datetime, wire: Wire, level: str, message: str, *, source: str = "") -> str:
    """One log line in the style of the program's ecosystem."""
    if wire is Wire.MONGODB:
        severity = {"ERROR": "E", "WARN": "W"}.get(level, "I")
        text = json.dumps(message, ensure_ascii=False)[1:-1]
        return (
            f'{{"t":{{"$date":"{stamp(now)}"}},"s":"{severity}","c":"NETWORK",'
            f'"id":22943,"ctx":"conn","msg":"{text}"}}'
        )
    if wire in (Wire.REDIS, Wire.MEMCACHED):
        return f"1:M {now.strftime('%d %b %Y %H:%M:%S')}.{now.microsecond // 1000:03d} * {message}"
    short = {"ERROR": "ERR", "WARN": "WRN", "INFO": "INF", "FATAL": "FTL"}.get(level, level)
    where = f" {source} >" if source else ""
    return f"{stamp(now)} {short}{where} {message}"


def record(
    now: datetime, wire: Wire, level: str, message: str, *, source: str = ""
) -> tuple[str, ...]:
    """A message as the program writes it to stdout, one entry per log line: a multi-line
    message (a stack trace, a dumped PEM block) is its stamped first line and then the rest as
    written; a program that logs JSON (MongoDB) keeps it on one line, the breaks escaped."""
    if wire is Wire.MONGODB:
        return (line(now, wire, level, message, source=source),)
    first, *rest = message.split("\n")
    return (line(now, wire, level, first, source=source), *rest)


def go_panic(message: str, program: str, *, frame: str = "main.main()") -> tuple[str, ...]:
    """A Go panic and the first frames of its stack trace, as the container log shows it."""
    return (
        message if message.startswith("panic:") else f"panic: {message}",
        "",
        "goroutine 1 [running]:",
        frame,
        f"\t/go/src/github.com/lab/{program}/main.go:54 +0x3c5",
        "exit status 2",
    )


class LogLimiter:
    """Allows each (key, message) once per interval of lab time."""

    def __init__(self, interval_s: float = 10.0, max_keys: int = 4096) -> None:
        self._interval_s = interval_s
        self._last: dict[tuple[str, str], float] = {}
        self._max_keys = max_keys

    def allow(self, key: str, message: str, now_s: float) -> bool:
        k = (key, message)
        last = self._last.get(k)
        if last is not None and now_s - last < self._interval_s:
            return False
        if len(self._last) >= self._max_keys:
            # Forget entries older than the interval; they would be allowed anyway.
            self._last = {kk: t for kk, t in self._last.items() if now_s - t < self._interval_s}
        self._last[k] = now_s
        return True
