"""JSON from untrusted senders, parsed within limits: a depth cap checked before parsing (so a
body of 100,000 `[` is refused in one pass instead of exhausting the recursion limit), and
every way the standard parser can fail turned into one `ValueError` subclass.

Used by the Alertmanager webhook and by the Slack endpoint.
"""

from __future__ import annotations

import json
from typing import Any

#: Alertmanager payloads nest 4 levels, Slack's block actions about 10.
MAX_DEPTH = 32


class JsonLimitError(ValueError):
    """Not JSON, or JSON beyond a limit. `str()` is one line."""


def nesting_depth(text: str) -> int:
    """The deepest nesting of `[`/`{` outside strings (escapes honoured)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def loads_bounded(body: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads` for a body from outside: UTF-8, at most `max_depth` levels deep."""
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
    except UnicodeDecodeError as e:
        raise JsonLimitError(f"not valid JSON: not UTF-8 ({e.reason} at byte {e.start})") from None
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JsonLimitError(f"nested {depth} levels deep (the limit is {max_depth})")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise JsonLimitError(f"not valid JSON: {e}") from None
