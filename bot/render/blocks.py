"""Block Kit building blocks that cannot break Slack's limits.

Every renderer builds its blocks from these helpers, and each helper clips what it is given to
the limit of the field it fills: section text ≤ 3,000 characters, fields and context ≤ 2,000,
headers ≤ 150, button text ≤ 75 and values ≤ 2,000, modal titles ≤ 24, ≤ 50 blocks in a
message and ≤ 100 in a view. Text that comes from the cluster (names, logs, diffs, runbooks) is
escaped for mrkdwn (`&`, `<`, `>`), so a log line cannot mention @channel or forge a link, and
clipping never cuts an escape in half.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Block = dict[str, Any]

SECTION_TEXT_MAX = 3000
FIELD_TEXT_MAX = 2000
CONTEXT_TEXT_MAX = 2000
CONTEXT_ELEMENTS_MAX = 10
FIELDS_MAX = 10
HEADER_TEXT_MAX = 150
BUTTON_TEXT_MAX = 75
BUTTON_VALUE_MAX = 2000
MESSAGE_BLOCKS_MAX = 50
VIEW_BLOCKS_MAX = 100
MODAL_TITLE_MAX = 24
MODAL_BUTTON_MAX = 24
CONFIRM_TITLE_MAX = 100
CONFIRM_TEXT_MAX = 300
CONFIRM_BUTTON_MAX = 30
PRIVATE_METADATA_MAX = 3000
INPUT_LABEL_MAX = 2000
#: The notification text of a message (Slack allows 40,000; a notification never needs that).
FALLBACK_TEXT_MAX = 3000

ELLIPSIS = "…"
_ENTITY_TAIL = re.compile(r"&[a-z]{0,3}$")


def escape(text: str) -> str:
    """mrkdwn-escape text that did not come from us."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, with an ellipsis when cut. An escape
    (`&amp;`) is never cut in half."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - len(ELLIPSIS))]
    cut = _ENTITY_TAIL.sub("", cut)
    return cut + ELLIPSIS


def esc(text: str, limit: int) -> str:
    """Escaped, then clipped (so the limit holds for what Slack receives)."""
    return clip(escape(text), limit)


def nonempty(text: str, placeholder: str = "—") -> str:
    return text if text.strip() else placeholder


def plain(text: str, limit: int) -> Block:
    return {"type": "plain_text", "text": clip(nonempty(text), limit), "emoji": True}


def mrkdwn(text: str, limit: int = SECTION_TEXT_MAX) -> Block:
    return {"type": "mrkdwn", "text": clip(nonempty(text), limit)}


def section(text: str, *, accessory: Block | None = None, block_id: str | None = None) -> Block:
    block: Block = {"type": "section", "text": mrkdwn(text)}
    if accessory is not None:
        block["accessory"] = accessory
    if block_id is not None:
        block["block_id"] = block_id[:255]
    return block


def fields(pairs: Sequence[tuple[str, str]]) -> Block:
    """A section of up to ten `*label*\\nvalue` fields."""
    shown = list(pairs)[:FIELDS_MAX]
    return {
        "type": "section",
        "fields": [mrkdwn(f"*{label}*\n{value}", FIELD_TEXT_MAX) for label, value in shown],
    }


def header(text: str) -> Block:
    return {"type": "header", "text": plain(text, HEADER_TEXT_MAX)}


def context(*texts: str) -> Block:
    shown = [t for t in texts if t.strip()][:CONTEXT_ELEMENTS_MAX] or ["—"]
    return {"type": "context", "elements": [mrkdwn(t, CONTEXT_TEXT_MAX) for t in shown]}


def divider() -> Block:
    return {"type": "divider"}


def confirm_dialog(*, title: str, text: str, confirm: str, deny: str = "Cancel") -> Block:
    return {
        "title": plain(title, CONFIRM_TITLE_MAX),
        "text": mrkdwn(text, CONFIRM_TEXT_MAX),
        "confirm": plain(confirm, CONFIRM_BUTTON_MAX),
        "deny": plain(deny, CONFIRM_BUTTON_MAX),
    }


def button(
    text: str,
    *,
    action_id: str,
    value: str,
    style: str | None = None,
    confirm: Block | None = None,
) -> Block:
    if len(value) > BUTTON_VALUE_MAX:
        # Button values carry ids only; a longer one is a bug, not something to clip.
        raise ValueError(f"button value of {len(value)} characters (max {BUTTON_VALUE_MAX})")
    element: Block = {
        "type": "button",
        "text": plain(text, BUTTON_TEXT_MAX),
        "action_id": action_id,
        "value": value,
    }
    if style is not None:
        element["style"] = style
    if confirm is not None:
        element["confirm"] = confirm
    return element


def actions(*elements: Block, block_id: str | None = None) -> Block:
    block: Block = {"type": "actions", "elements": list(elements)[:25]}
    if block_id is not None:
        block["block_id"] = block_id[:255]
    return block


def _fence_safe(text: str) -> str:
    # A literal ``` inside a code block would end it early.
    return text.replace("```", "ˋˋˋ")


def code(text: str, limit: int = SECTION_TEXT_MAX) -> str:
    """`text` as a mrkdwn code block of at most `limit` characters, fences included."""
    body = escape(_fence_safe(text.rstrip("\n"))) or " "
    room = limit - len("```\n\n```")
    if len(body) > room:
        body = clip(body, room)
    return f"```\n{body}\n```"


def fits(text: str, limit: int = SECTION_TEXT_MAX) -> bool:
    """Whether `text` shown as a code block fits one section without clipping."""
    return len(escape(_fence_safe(text.rstrip("\n")))) + len("```\n\n```") <= limit


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachment:
    """Content too long for a message, uploaded as a file next to it."""

    filename: str
    title: str
    content: str | bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """What a renderer returns: the notification text, the blocks, and any files that carry
    what did not fit.

    `text` is plain: Slack shows it in notifications and parses it as mrkdwn, so `payload()`
    escapes it (an alert titled `<!channel>` or `<http://x|click>` must not notify or link)."""

    text: str
    blocks: tuple[Block, ...]
    files: tuple[Attachment, ...] = field(default=())

    def payload(self) -> tuple[str, list[Block]]:
        return clip(escape(nonempty(self.text)), FALLBACK_TEXT_MAX), fit_blocks(self.blocks)


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """A modal, ready for `views.open`/`views.update`."""

    callback_id: str
    title: str
    blocks: tuple[Block, ...]
    submit: str | None = None
    close: str = "Close"
    private_metadata: str = ""

    def payload(self) -> Block:
        if len(self.private_metadata) > PRIVATE_METADATA_MAX:
            raise ValueError("private_metadata carries ids only; this one is too long")
        view: Block = {
            "type": "modal",
            "callback_id": self.callback_id,
            "title": plain(self.title, MODAL_TITLE_MAX),
            "close": plain(self.close, MODAL_BUTTON_MAX),
            "blocks": fit_blocks(self.blocks, limit=VIEW_BLOCKS_MAX),
            "private_metadata": self.private_metadata,
        }
        if self.submit is not None:
            view["submit"] = plain(self.submit, MODAL_BUTTON_MAX)
        return view


def fit_blocks(blocks: Sequence[Block], *, limit: int = MESSAGE_BLOCKS_MAX) -> list[Block]:
    """At most `limit` blocks: the excess is replaced by one context block saying so. The
    renderers stay under the limit themselves; this is the last line of defence."""
    if len(blocks) <= limit:
        return list(blocks)
    kept = list(blocks[: limit - 1])
    kept.append(context(f"{len(blocks) - len(kept)} more blocks not shown."))
    return kept
