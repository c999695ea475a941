"""The emoji the local workspace knows: `:name:` codes and the character each shows as.

Real Slack knows thousands of codes; a workspace page without an emoji font shows an unknown
code as raw text (`:sos:`), which is what an on-call engineer then reads. One list here is
served to the page (`/static/emoji.js`) and read by the message checks, so a renderer that
uses a code this workspace cannot show fails a test instead of a demo.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType

KNOWN_EMOJI: Mapping[str, str] = MappingProxyType(
    {
        "white_check_mark": "✅",
        "heavy_check_mark": "✔️",
        "x": "❌",
        "warning": "⚠️",
        "rotating_light": "🚨",
        "fire": "🔥",
        "hourglass": "⌛",
        "hourglass_flowing_sand": "⏳",
        "red_circle": "🔴",
        "large_green_circle": "🟢",
        "large_yellow_circle": "🟡",
        "large_orange_circle": "🟠",
        "large_blue_circle": "🔵",
        "white_circle": "⚪",
        "black_circle": "⚫",
        "mag": "🔍",
        "arrows_counterclockwise": "🔄",
        "rewind": "⏪",
        "fast_forward": "⏩",
        "leftwards_arrow_with_hook": "↩️",
        "bulb": "💡",
        "chart_with_upwards_trend": "📈",
        "chart_with_downwards_trend": "📉",
        "bar_chart": "📊",
        "pushpin": "📌",
        "lock": "🔒",
        "unlock": "🔓",
        "key": "🔑",
        "gear": "⚙️",
        "wrench": "🔧",
        "hammer_and_wrench": "🛠️",
        "rocket": "🚀",
        "tada": "🎉",
        "eyes": "👀",
        "thumbsup": "👍",
        "+1": "👍",
        "thumbsdown": "👎",
        "-1": "👎",
        "raised_hand": "✋",
        "stop_sign": "🛑",
        "no_entry": "⛔",
        "no_entry_sign": "🚫",
        "sos": "🆘",
        "checkered_flag": "🏁",
        "double_vertical_bar": "⏸️",
        "test_tube": "🧪",
        "pencil2": "✏️",
        "information_source": "ℹ️",
        "question": "❓",
        "grey_question": "❔",
        "exclamation": "❗",
        "heavy_plus_sign": "➕",
        "heavy_minus_sign": "➖",
        "memo": "📝",
        "clipboard": "📋",
        "scroll": "📜",
        "books": "📚",
        "package": "📦",
        "robot_face": "🤖",
        "brain": "🧠",
        "stopwatch": "⏱️",
        "clock1": "🕐",
        "calendar": "📆",
        "link": "🔗",
        "sparkles": "✨",
        "zap": "⚡",
        "ambulance": "🚑",
        "construction": "🚧",
        "shield": "🛡️",
        "bust_in_silhouette": "👤",
        "busts_in_silhouette": "👥",
        "wave": "👋",
        "relaxed": "☺️",
        "bell": "🔔",
        "arrow_right": "➡️",
        "arrow_up": "⬆️",
        "arrow_down": "⬇️",
        "small_red_triangle_down": "🔻",
        "small_red_triangle": "🔺",
        "large_green_square": "🟩",
        "large_red_square": "🟥",
        "large_yellow_square": "🟨",
        "skull": "💀",
        "boom": "💥",
        "card_index_dividers": "🗂️",
    }
)

#: An emoji code as mrkdwn writes it. Mentions (`<@U1>`), links and code spans are not emoji;
#: callers strip those first (see `emoji_codes`).
_CODE = re.compile(r"(?<![\w:]):([a-z0-9_+\-']+):(?![\w:])")
_NOT_TEXT = re.compile(r"```.*?```|`[^`\n]*`|<[^>\n]*>", re.DOTALL)


def emoji_codes(mrkdwn: str) -> list[str]:
    """The emoji codes in mrkdwn text, outside code spans, code blocks, mentions and links."""
    return _CODE.findall(_NOT_TEXT.sub(" ", mrkdwn))


def unknown_emoji(mrkdwn: str) -> list[str]:
    """Codes this workspace would show as raw text."""
    return [name for name in emoji_codes(mrkdwn) if name not in KNOWN_EMOJI]


def emoji_script() -> bytes:
    """The list for the page, as a script that sets `window.SLACK_EMOJI`."""
    return f"window.SLACK_EMOJI = {json.dumps(dict(KNOWN_EMOJI), ensure_ascii=False)};\n".encode()
