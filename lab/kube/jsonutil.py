"""Small helpers for JSON documents: fast deep copies, compact encoding, lab timestamps.

Stored objects are never mutated in place (every write builds a new dict), so watch history and
cached encodings can share them; whatever leaves the store is a deep copy. `copy.deepcopy` is
several times slower than a copier that knows it only meets dicts, lists and scalars.
"""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from typing import Any

from agents.model import JsonObject

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: deep_copy(v) if isinstance(v, dict | list) else v for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) if isinstance(v, dict | list) else v for v in value]
    return value


def copy_obj(obj: JsonObject) -> JsonObject:
    result: JsonObject = deep_copy(obj)
    return result


def dumps(value: Any) -> bytes:
    return _encoder.encode(value).encode()


def rfc3339(moment: datetime) -> str:
    """Seconds precision, UTC, `Z`: metav1.Time as the server writes it."""
    return _rfc3339(moment)


# Cached: the kubelet stamps every pod it visits with the same few instants (now, each
# pod's start). Behind a typed wrapper, since the cache's own signature takes anything.
@functools.lru_cache(maxsize=4096)
def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(moment: datetime) -> str:
    """metav1.MicroTime (event times, lease renewals)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None


def get_path(obj: Any, *keys: str | int, default: Any = None) -> Any:
    """obj[k1][k2]... or `default` when any step is missing or of the wrong type."""
    value = obj
    for key in keys:
        if isinstance(key, int):
            if not isinstance(value, list) or not -len(value) <= key < len(value):
                return default
        elif not isinstance(value, dict) or key not in value:
            return default
        value = value[key]
    return default if value is None else value


def humanize_age(seconds: float) -> str:
    """kubectl's duration format for AGE / LAST SEEN columns (`5s`, `3m2s`, `4h`, `2d3h`)."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = (s % 3600) // 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
