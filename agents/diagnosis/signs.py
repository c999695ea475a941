"""Reading log lines and status messages: what kind of failure a line reports, and whom it
blames.

These are the words that runtimes, client libraries and databases actually print (Go's
net/grpc errors, MongoDB and Postgres drivers, runc, the kubelet), not the names of faults.
A line from a caller that says `dial tcp 10.96.0.12:8083: connect: connection refused` blames
whatever owns 10.96.0.12, whichever way that Service got broken.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum


class Sign(StrEnum):
    PANIC = "panic"
    AUTH = "auth"  # credentials refused, or not authorized for the command
    REFUSED = "refused"
    TIMEOUT = "timeout"
    NO_HOST = "no_host"  # a name that does not resolve
    UNREACHABLE = "unreachable"  # no reachable servers, unavailable, no healthy upstream
    EXEC = "exec"  # the command names a binary the image lacks
    OOM = "oom"
    BAD_CONFIG = "bad_config"  # invalid setting, parse error of a config file
    FEATURE_FLAG = "feature_flag"
    SERVER_ERROR = "server_error"  # a callee answered with an error
    ERROR = "error"  # some other error line


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives), re.I)


_RULES: tuple[tuple[Sign, re.Pattern[str]], ...] = (
    (
        Sign.EXEC,
        _rx(
            r"exec: \"?[^\"]*\"?: .*(no such file or directory|not found in \$PATH)",
            r"executable file not found",
        ),
    ),
    (
        Sign.AUTH,
        _rx(
            r"not authori[sz]ed",
            r"authentication failed",
            r"auth(entication)? error",
            r"access denied for user",
            r"password authentication failed",
            r"unauthenticated",
            r"permission denied for (database|table|relation)",
            r"NOAUTH",
            r"WRONGPASS",
            r"invalid password",
            r"bad credentials",
        ),
    ),
    (Sign.OOM, _rx(r"\bOOMKilled\b", r"out of memory", r"cannot allocate memory")),
    (
        Sign.NO_HOST,
        _rx(
            r"no such host",
            r"Name or service not known",
            r"could not resolve",
            r"getaddrinfo",
            r"Temporary failure in name resolution",
            r"NXDOMAIN",
        ),
    ),
    (
        Sign.REFUSED,
        _rx(r"connection refused", r"ECONNREFUSED", r"connection reset", r"reset by peer"),
    ),
    (
        Sign.TIMEOUT,
        _rx(
            r"deadline exceeded",
            r"DeadlineExceeded",
            r"i/o timeout",
            r"timed? ?out",
            r"ETIMEDOUT",
            r"context canceled",
        ),
    ),
    (
        Sign.UNREACHABLE,
        _rx(
            r"no reachable servers",
            r"code = Unavailable",
            r"UnableToConnect",
            r"no healthy upstream",
            r"service unavailable",
            r"upstream connect error",
            r"not possible to connect",
        ),
    ),
    (Sign.FEATURE_FLAG, _rx(r"feature[ _-]?flag", r"\bflag enabled\b", r"FlagEnabled")),
    (
        Sign.BAD_CONFIG,
        _rx(
            r"invalid (port|value|config|setting|address)",
            r"error parsing",
            r"parse error",
            r"missing required",
            r"unknown (option|setting)",
            r"configuration error",
        ),
    ),
    (
        Sign.PANIC,
        _rx(
            r"^\s*panic:",
            r"goroutine \d+ \[running\]",
            r"Traceback \(most recent call last\)",
            r"Unhandled exception",
            r"\bFATAL\b",
            r"SIGSEGV",
            r"segmentation fault",
            r"NullPointerException",
        ),
    ),
    (
        Sign.SERVER_ERROR,
        _rx(
            r"responded 5\d\d",
            r"status (code )?5\d\d",
            r"code = (Unknown|Internal)",
            r"\b50[0-4]\b",
        ),
    ),
)

_ERRORISH = re.compile(
    r"\b(ERR|ERROR|FTL|FATAL|CRIT|CRITICAL|panic|Exception|WRN|WARN|WARNING)\b|\"s\":\"[EF]\"|"
    r"\bfailed\b|\berror\b|refused|timeout|deadline|not authori[sz]ed",
    re.I,
)
_IP = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3})(?::\d+)?\b")


def is_error_line(line: str) -> bool:
    return bool(_ERRORISH.search(line))


def classify(line: str) -> Sign | None:
    """The most specific sign a line shows, or None for a line that reports no failure."""
    for sign, pattern in _RULES:
        if pattern.search(line):
            return sign
    return Sign.ERROR if is_error_line(line) else None


def signs_of(lines: Iterable[str]) -> dict[Sign, int]:
    counts: dict[Sign, int] = {}
    for line in lines:
        sign = classify(line)
        if sign is not None:
            counts[sign] = counts.get(sign, 0) + 1
    return counts


def _name_pattern(name: str) -> re.Pattern[str]:
    # Service names contain '-', so a name inside a longer name ("geo" in "mongodb-geo") or a
    # database name ("geo-db") is not a mention.
    return re.compile(rf"(?<![A-Za-z0-9_.-]){re.escape(name)}(?![A-Za-z0-9_-])")


class Blamer:
    """Finds the services a line names, by Service name or by an address one of them owns."""

    def __init__(self, services: Iterable[str], addresses: Mapping[str, str]) -> None:
        names = sorted(set(services), key=len, reverse=True)
        self._patterns = [(n, _name_pattern(n)) for n in names if len(n) >= 2]
        self._addresses = dict(addresses)  # ip → service

    def blamed(self, line: str, *, own: str) -> list[str]:
        found: list[tuple[int, str]] = []
        for name, pattern in self._patterns:
            if name == own:
                continue
            match = pattern.search(line)
            if match:
                found.append((match.start(), name))
        for match in _IP.finditer(line):
            service = self._addresses.get(match.group(1))
            if service and service != own:
                found.append((match.start(), service))
        seen: set[str] = set()
        ordered = []
        for _, name in sorted(found):
            if name not in seen:
                seen.add(name)
                ordered.append(name)
        return ordered


_HOST_VALUE = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^@/\s]+@)?(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*)(?::(?P<port>\d{1,5}))?(?:/.*)?$"
)


def address_of(value: str) -> tuple[str, int | None] | None:
    """`host[:port]` (or a URL) in a setting's value: the first DNS label and the port."""
    text = value.strip()
    if not text or " " in text or len(text) > 253:
        return None
    match = _HOST_VALUE.match(text)
    if match is None:
        return None
    host = match["host"]
    label = host.split(".")[0]
    port = int(match["port"]) if match["port"] else None
    return label, port


def looks_like_address_key(key: str) -> bool:
    return bool(re.search(r"(ADDR|HOST|URL|URI|ENDPOINT|SERVER|SERVICE|DSN|_SVC)", key, re.I))


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: how many one-letter edits turn `a` into `b` (a host name one
    typo away from a Service's is a misspelt address, not another service)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]
