"""Alertmanager's identity of an alert and its way of writing times.

`fingerprint` is Prometheus's `model.LabelSet.Fingerprint()`: FNV-1a (64 bit) over the label
names and values sorted by name, each followed by the 0xff separator byte, printed as 16 hex
digits — the `fingerprint` field of a webhook alert. `go_time` is Go's RFC 3339 with
nanoseconds, trailing zeros trimmed, as Alertmanager marshals `startsAt`/`endsAt`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_MASK = (1 << 64) - 1
_SEPARATOR = 0xFF

#: Go's zero time, which Alertmanager writes as the `endsAt` of a firing alert.
ZERO_TIME = "0001-01-01T00:00:00Z"


def _add(h: int, data: bytes) -> int:
    for byte in data:
        h ^= byte
        h = (h * _FNV_PRIME) & _MASK
    return h


def fingerprint(labels: Mapping[str, str]) -> str:
    h = _FNV_OFFSET
    for name in sorted(labels):
        h = _add(h, name.encode())
        h = _add(h, bytes((_SEPARATOR,)))
        h = _add(h, labels[name].encode())
        h = _add(h, bytes((_SEPARATOR,)))
    return f"{h:016x}"


def go_time(moment: datetime | None) -> str:
    """`time.Time.MarshalJSON` (RFC 3339, nanoseconds without trailing zeros); None is the
    zero time."""
    if moment is None:
        return ZERO_TIME
    utc = moment.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += "." + f"{utc.microsecond:06d}".rstrip("0")
    return text + "Z"
