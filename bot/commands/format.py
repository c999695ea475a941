"""Formatting rules the command replies, the App Home and the digest share beyond
`bot.render.text`: bounded bullet lists and human durations."""

from __future__ import annotations

from collections.abc import Iterable

from bot.render.blocks import SECTION_TEXT_MAX, clip


def bullet_lines(lines: Iterable[str], *, limit: int = SECTION_TEXT_MAX) -> str:
    """`• a\\n• b` within `limit` characters, ending with "…and N more" when not all fit."""
    items = list(lines)
    out: list[str] = []
    used = 0
    for index, line in enumerate(items):
        entry = clip(f"• {line}", max(1, limit - 20))
        rest = len(items) - index
        tail = len(f"\n…and {rest - 1} more") if rest > 1 else 0
        if used + len(entry) + tail > limit:
            out.append(f"…and {rest} more")
            break
        out.append(entry)
        used += len(entry) + 1
    return "\n".join(out)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
