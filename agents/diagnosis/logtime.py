"""When a log line was written, and whether it is recent enough to be evidence.

A tail is read by line count, not by time, so it can reach far back: a service that has been
quiet for an hour still shows its start-up lines ("error calling mongodb-rate: no reachable
servers" while its database was starting). Such a line says nothing about an incident that
started minutes ago, yet read as evidence it becomes a hypothesis of its own. So log evidence
is bounded in time: lines written before `incident start − since` are dropped before any rule
reads them; lines after the start are kept.

The time is the line's own: the RFC 3339 prefix runtimes and `kubectl logs --timestamps` (the
API's `timestamps=true`) write, or the time field of a JSON line (`time`, `ts`, `timestamp`,
`@timestamp`, MongoDB's `{"t":{"$date":…}}`). A line with no time of its own (a stack trace's
continuation) belongs to the record above it, so it goes where that record goes; lines before
the first stamped one are kept — nothing says they are old. A stamp without a zone is UTC, as
Kubernetes writes them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

_PREFIX = re.compile(
    r"^\s*\[?(?P<at>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)"
)
_JSON_TIME = re.compile(
    r'"(?:time|ts|timestamp|@timestamp|\$date)"\s*:\s*"(?P<at>\d{4}-\d{2}-\d{2}[T ]'
    r'\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)"'
)
_FRACTION = re.compile(r"[.,](\d+)")


def _parse(text: str) -> datetime | None:
    text = text.replace(" ", "T", 1).replace("Z", "+00:00")
    text = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    if re.search(r"[+-]\d{4}$", text):
        text = f"{text[:-2]}:{text[-2:]}"
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def line_time(line: str) -> datetime | None:
    """The time a line carries (its prefix, or a JSON line's time field), if any."""
    match = _PREFIX.match(line)
    if match is None and line.lstrip().startswith("{"):
        match = _JSON_TIME.search(line[:400])
    return _parse(match["at"]) if match is not None else None


def since(lines: Sequence[str], cutoff: datetime) -> tuple[list[str], int]:
    """The lines written at or after `cutoff` (by the rules above), and how many were
    dropped as older."""
    kept: list[str] = []
    dropped = 0
    keep = True  # lines before the first stamp: nothing says they are old
    for line in lines:
        at = line_time(line)
        if at is not None:
            keep = at >= cutoff
        if keep:
            kept.append(line)
        else:
            dropped += 1
    return kept, dropped
