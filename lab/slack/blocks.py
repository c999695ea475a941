"""Block Kit limits, checked the way Slack checks them.

Slack refuses a message whose blocks break its schema with `invalid_blocks` and a list of
errors, each pointing at the offending field with a JSON pointer; a view with bad blocks gets
`invalid_arguments`. The limits enforced here are the ones a bot meets in practice (text
lengths, item counts, id lengths, enum values, duplicate ids) — exactly what the Stratus
renderers must respect (section text ≤ 3,000, button value ≤ 2,000, ≤ 50 blocks).

`normalise` then does what Slack does to accepted blocks: it fills in a `block_id` for every
block and an `action_id` for every interactive element that lack one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.model import JsonObject

MESSAGE_MAX_BLOCKS = 50
VIEW_MAX_BLOCKS = 100
ID_MAX = 255

_TEXT_TYPES = ("plain_text", "mrkdwn")
_SELECTS = (
    "static_select",
    "multi_static_select",
    "users_select",
    "multi_users_select",
    "conversations_select",
    "multi_conversations_select",
    "channels_select",
    "multi_channels_select",
    "external_select",
    "multi_external_select",
)
_INPUTS = (
    "plain_text_input",
    "number_input",
    "email_text_input",
    "url_text_input",
    "rich_text_input",
    "datepicker",
    "timepicker",
    "datetimepicker",
    "radio_buttons",
    "checkboxes",
    "file_input",
    *_SELECTS,
)
INTERACTIVE = frozenset(("button", "overflow", *_INPUTS))
_BLOCK_TYPES = frozenset(
    (
        "section",
        "header",
        "divider",
        "context",
        "image",
        "actions",
        "input",
        "rich_text",
        "file",
        "markdown",
        "video",
    )
)


class _Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.block_ids: set[str] = set()

    def fail(self, pointer: str, message: str) -> None:
        self.errors.append(f"{message} [json-pointer:{pointer}]")

    # -------------------------------------------------------------- primitives

    def string(self, value: Any, pointer: str, *, max_len: int, required: bool = True) -> None:
        if value is None:
            if required:
                self.fail(pointer, "missing required field")
            return
        if not isinstance(value, str):
            self.fail(pointer, "must provide a string")
        elif len(value) > max_len:
            self.fail(pointer, f"must be less than {max_len + 1} characters")

    def text(
        self,
        value: Any,
        pointer: str,
        *,
        max_len: int,
        plain_only: bool = False,
        required: bool = True,
    ) -> None:
        if value is None:
            if required:
                self.fail(pointer, "missing required field")
            return
        if not isinstance(value, dict):
            self.fail(pointer, "must provide an object")
            return
        kind = value.get("type")
        allowed = ("plain_text",) if plain_only else _TEXT_TYPES
        if kind not in allowed:
            self.fail(f"{pointer}/type", "must be a valid enum value")
        text = value.get("text")
        if not isinstance(text, str) or not text:
            self.fail(f"{pointer}/text", "must be more than 0 characters")
        elif len(text) > max_len:
            self.fail(f"{pointer}/text", f"must be less than {max_len + 1} characters")

    def items(self, value: Any, pointer: str, *, min_n: int, max_n: int) -> list[Any]:
        if not isinstance(value, list):
            self.fail(pointer, "must provide an array")
            return []
        if len(value) < min_n:
            self.fail(pointer, f"must provide at least {min_n} items")
        if len(value) > max_n:
            self.fail(pointer, f"no more than {max_n} items allowed")
        return value

    def ident(self, value: Any, pointer: str) -> None:
        if value is not None:
            self.string(value, pointer, max_len=ID_MAX)

    # -------------------------------------------------------------- composition objects

    def confirm(self, value: Any, pointer: str) -> None:
        if value is None:
            return
        if not isinstance(value, dict):
            self.fail(pointer, "must provide an object")
            return
        self.text(value.get("title"), f"{pointer}/title", max_len=100, plain_only=True)
        self.text(value.get("text"), f"{pointer}/text", max_len=300)
        self.text(value.get("confirm"), f"{pointer}/confirm", max_len=30, plain_only=True)
        self.text(value.get("deny"), f"{pointer}/deny", max_len=30, plain_only=True)
        if value.get("style") not in (None, "primary", "danger"):
            self.fail(f"{pointer}/style", "must be a valid enum value")

    def option(self, value: Any, pointer: str, *, plain_only: bool) -> None:
        if not isinstance(value, dict):
            self.fail(pointer, "must provide an object")
            return
        self.text(value.get("text"), f"{pointer}/text", max_len=75, plain_only=plain_only)
        self.string(value.get("value"), f"{pointer}/value", max_len=150)
        self.text(value.get("description"), f"{pointer}/description", max_len=75, required=False)

    def options(self, value: Any, pointer: str, *, max_n: int, plain_only: bool) -> None:
        for i, option in enumerate(self.items(value, pointer, min_n=1, max_n=max_n)):
            self.option(option, f"{pointer}/{i}", plain_only=plain_only)

    # -------------------------------------------------------------- elements

    def element(self, value: Any, pointer: str, *, allowed: frozenset[str]) -> None:
        if not isinstance(value, dict):
            self.fail(pointer, "must provide an object")
            return
        kind = value.get("type")
        if kind not in allowed:
            self.fail(f"{pointer}/type", f"unsupported element type: {kind}")
            return
        if kind in INTERACTIVE:
            self.ident(value.get("action_id"), f"{pointer}/action_id")
            self.confirm(value.get("confirm"), f"{pointer}/confirm")
        if kind == "image":
            self.string(value.get("image_url"), f"{pointer}/image_url", max_len=3000)
            self.string(value.get("alt_text"), f"{pointer}/alt_text", max_len=2000)
        elif kind == "button":
            self.text(value.get("text"), f"{pointer}/text", max_len=75, plain_only=True)
            self.string(value.get("value"), f"{pointer}/value", max_len=2000, required=False)
            self.string(value.get("url"), f"{pointer}/url", max_len=3000, required=False)
            if value.get("style") not in (None, "primary", "danger"):
                self.fail(f"{pointer}/style", "must be a valid enum value")
        elif kind == "overflow":
            self.options(value.get("options"), f"{pointer}/options", max_n=5, plain_only=True)
        elif kind in ("radio_buttons", "checkboxes"):
            self.options(value.get("options"), f"{pointer}/options", max_n=10, plain_only=False)
        elif kind in ("static_select", "multi_static_select"):
            self.text(
                value.get("placeholder"),
                f"{pointer}/placeholder",
                max_len=150,
                plain_only=True,
                required=False,
            )
            if "option_groups" in value:
                groups = self.items(
                    value["option_groups"], f"{pointer}/option_groups", min_n=1, max_n=100
                )
                for i, group in enumerate(groups):
                    where = f"{pointer}/option_groups/{i}"
                    if isinstance(group, dict):
                        self.text(group.get("label"), f"{where}/label", max_len=75, plain_only=True)
                        self.options(
                            group.get("options"), f"{where}/options", max_n=100, plain_only=True
                        )
            else:
                self.options(value.get("options"), f"{pointer}/options", max_n=100, plain_only=True)
        elif kind == "plain_text_input":
            max_length = value.get("max_length")
            if max_length is not None and (not isinstance(max_length, int) or max_length > 3000):
                self.fail(f"{pointer}/max_length", "must be less than 3001")
            self.string(
                value.get("initial_value"), f"{pointer}/initial_value", max_len=3000, required=False
            )

    # -------------------------------------------------------------- blocks

    def block(self, value: Any, pointer: str) -> None:
        if not isinstance(value, dict):
            self.fail(pointer, "must provide an object")
            return
        kind = value.get("type")
        if kind not in _BLOCK_TYPES:
            self.fail(f"{pointer}/type", f"unsupported block type: {kind}")
            return
        block_id = value.get("block_id")
        if block_id is not None:
            self.ident(block_id, f"{pointer}/block_id")
            if block_id in self.block_ids:
                self.fail(f"{pointer}/block_id", "duplicate block_id")
            self.block_ids.add(str(block_id))
        check = getattr(self, f"_{kind}", None)
        if check is not None:
            check(value, pointer)

    def _section(self, value: JsonObject, pointer: str) -> None:
        if value.get("text") is None and value.get("fields") is None:
            self.fail(pointer, "must provide either text or fields")
        self.text(value.get("text"), f"{pointer}/text", max_len=3000, required=False)
        if value.get("fields") is not None:
            fields = self.items(value["fields"], f"{pointer}/fields", min_n=1, max_n=10)
            for i, field in enumerate(fields):
                self.text(field, f"{pointer}/fields/{i}", max_len=2000)
        if value.get("accessory") is not None:
            self.element(value["accessory"], f"{pointer}/accessory", allowed=_ACCESSORIES)

    def _header(self, value: JsonObject, pointer: str) -> None:
        self.text(value.get("text"), f"{pointer}/text", max_len=150, plain_only=True)

    def _context(self, value: JsonObject, pointer: str) -> None:
        elements = self.items(value.get("elements"), f"{pointer}/elements", min_n=1, max_n=10)
        for i, element in enumerate(elements):
            where = f"{pointer}/elements/{i}"
            if isinstance(element, dict) and element.get("type") == "image":
                self.element(element, where, allowed=frozenset(("image",)))
            else:
                self.text(element, where, max_len=2000)

    def _image(self, value: JsonObject, pointer: str) -> None:
        if value.get("slack_file") is None:
            self.string(value.get("image_url"), f"{pointer}/image_url", max_len=3000)
        self.string(value.get("alt_text"), f"{pointer}/alt_text", max_len=2000)
        self.text(
            value.get("title"), f"{pointer}/title", max_len=2000, plain_only=True, required=False
        )

    def _actions(self, value: JsonObject, pointer: str) -> None:
        elements = self.items(value.get("elements"), f"{pointer}/elements", min_n=1, max_n=25)
        seen: set[str] = set()
        for i, element in enumerate(elements):
            self.element(element, f"{pointer}/elements/{i}", allowed=INTERACTIVE)
            action_id = element.get("action_id") if isinstance(element, dict) else None
            if isinstance(action_id, str):
                if action_id in seen:
                    self.fail(f"{pointer}/elements/{i}/action_id", "duplicate action_id")
                seen.add(action_id)

    def _input(self, value: JsonObject, pointer: str) -> None:
        self.text(value.get("label"), f"{pointer}/label", max_len=2000, plain_only=True)
        self.text(
            value.get("hint"), f"{pointer}/hint", max_len=2000, plain_only=True, required=False
        )
        if value.get("element") is None:
            self.fail(f"{pointer}/element", "missing required field")
        else:
            self.element(value["element"], f"{pointer}/element", allowed=_INPUT_SET)

    def _markdown(self, value: JsonObject, pointer: str) -> None:
        self.string(value.get("text"), f"{pointer}/text", max_len=12000)


_ACCESSORIES = frozenset(("image", "button", "overflow", *_INPUTS))
_INPUT_SET = frozenset(_INPUTS)


def _check(blocks: Any, *, max_blocks: int) -> list[str]:
    checker = _Checker()
    for i, block in enumerate(checker.items(blocks, "/blocks", min_n=0, max_n=max_blocks)):
        checker.block(block, f"/blocks/{i}")
    return checker.errors


def check_message_blocks(blocks: Any) -> list[str]:
    """Errors (empty when valid) for the blocks of a message."""
    return _check(blocks, max_blocks=MESSAGE_MAX_BLOCKS)


def check_view(view: Any) -> list[str]:
    """Errors (empty when valid) for a modal or Home tab view."""
    if not isinstance(view, dict):
        return ["must provide an object [json-pointer:/view]"]
    checker = _Checker()
    kind = view.get("type")
    if kind not in ("modal", "home"):
        checker.fail("/view/type", "must be a valid enum value")
    if kind == "modal":
        checker.text(view.get("title"), "/view/title", max_len=24, plain_only=True)
        checker.text(
            view.get("submit"), "/view/submit", max_len=24, plain_only=True, required=False
        )
        checker.text(view.get("close"), "/view/close", max_len=24, plain_only=True, required=False)
        has_input = any(
            isinstance(b, dict) and b.get("type") == "input" for b in view.get("blocks") or []
        )
        if has_input and view.get("submit") is None:
            checker.fail("/view/submit", "submit is required when an input block is present")
    checker.string(
        view.get("private_metadata"), "/view/private_metadata", max_len=3000, required=False
    )
    checker.string(view.get("callback_id"), "/view/callback_id", max_len=ID_MAX, required=False)
    checker.string(view.get("external_id"), "/view/external_id", max_len=ID_MAX, required=False)
    blocks = checker.items(view.get("blocks"), "/view/blocks", min_n=0, max_n=VIEW_MAX_BLOCKS)
    for i, block in enumerate(blocks):
        checker.block(block, f"/view/blocks/{i}")
    return checker.errors


def normalise(blocks: list[JsonObject], new_id: Callable[[], str]) -> list[JsonObject]:
    """Fill in missing block_ids and action_ids as Slack does (on a copy)."""
    out: list[JsonObject] = []
    for original in blocks:
        block = dict(original)
        block.setdefault("block_id", new_id())
        if "elements" in block and block.get("type") == "actions":
            block["elements"] = [_with_action_id(e, new_id) for e in block["elements"]]
        for key in ("accessory", "element"):
            if isinstance(block.get(key), dict):
                block[key] = _with_action_id(block[key], new_id)
        out.append(block)
    return out


def _with_action_id(element: JsonObject, new_id: Callable[[], str]) -> JsonObject:
    element = dict(element)
    if element.get("type") in INTERACTIVE:
        element.setdefault("action_id", new_id())
    return element
