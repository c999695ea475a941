"""What a user's input on a Block Kit element becomes on the wire.

A click on a button, a choice in a select, text typed into a modal: Slack reports each as an
entry of `actions[]` (block_actions) or as `view.state.values[block_id][action_id]`
(view_submission), with a shape that depends on the element type. Both the Python API
(`ws.click`, `ws.submit_view`) and the page reduce a user's input to a plain value (a string,
a list of strings, or None) and let these functions build the exact shape.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from agents.model import JsonObject

#: Input given by a user: the text typed, the chosen option value(s), the user id picked...
UserInput = str | list[str] | None

_SINGLE_KEY = {
    "users_select": "selected_user",
    "conversations_select": "selected_conversation",
    "channels_select": "selected_channel",
    "datepicker": "selected_date",
    "timepicker": "selected_time",
    "datetimepicker": "selected_date_time",
}
_MULTI_KEY = {
    "multi_users_select": "selected_users",
    "multi_conversations_select": "selected_conversations",
    "multi_channels_select": "selected_channels",
}
_TEXT_INPUTS = ("plain_text_input", "number_input", "email_text_input", "url_text_input")


class ElementInputError(ValueError):
    """The input does not fit the element (no such option, a list for a single select...)."""


def iter_elements(blocks: list[JsonObject]) -> Iterator[tuple[str, JsonObject]]:
    """(block_id, element) for every element a user can act on, in page order."""
    for block in blocks:
        block_id = str(block.get("block_id", ""))
        if block.get("type") == "actions":
            for element in block.get("elements", []):
                yield block_id, element
        for key in ("accessory", "element"):
            element = block.get(key)
            if isinstance(element, dict) and element.get("action_id"):
                yield block_id, element


def find_element(
    blocks: list[JsonObject],
    action_id: str,
    *,
    value: str | None = None,
    block_id: str | None = None,
) -> tuple[str, JsonObject] | None:
    """The element with `action_id` (in block `block_id` when given); among several buttons
    sharing it, the one whose value is `value` (a message may carry one Undo button per
    transaction, all with one action_id)."""
    candidates = [
        (b, e)
        for b, e in iter_elements(blocks)
        if e.get("action_id") == action_id and block_id in (None, b)
    ]
    if value is not None:
        exact = [
            (b, e) for b, e in candidates if e.get("type") == "button" and e.get("value") == value
        ]
        if exact:
            return exact[0]
    return candidates[0] if candidates else None


def options_of(element: JsonObject) -> list[JsonObject]:
    if "option_groups" in element:
        return [o for group in element["option_groups"] for o in group.get("options", [])]
    return list(element.get("options", []))


def _option(element: JsonObject, value: str) -> JsonObject:
    for option in options_of(element):
        if option.get("value") == value:
            return copy.deepcopy(option)
    raise ElementInputError(
        f"{element.get('type')} {element.get('action_id')!r} has no option {value!r}"
    )


def _single(raw: UserInput) -> str | None:
    if isinstance(raw, list):
        if len(raw) > 1:
            raise ElementInputError("a single-choice element takes one value")
        return raw[0] if raw else None
    return raw


def _multi(raw: UserInput) -> list[str]:
    if raw is None:
        return []
    return [raw] if isinstance(raw, str) else list(raw)


def selection(element: JsonObject, raw: UserInput) -> JsonObject:
    """The element-type-specific fields for a user's input: `value`, `selected_option`, ..."""
    kind = str(element.get("type"))
    if kind in _TEXT_INPUTS:
        return {"value": _single(raw)}
    if kind in ("static_select", "radio_buttons", "overflow", "external_select"):
        chosen = _single(raw)
        return {"selected_option": _option(element, chosen) if chosen is not None else None}
    if kind in ("multi_static_select", "checkboxes", "multi_external_select"):
        return {"selected_options": [_option(element, v) for v in _multi(raw)]}
    if kind in _SINGLE_KEY:
        return {_SINGLE_KEY[kind]: _single(raw)}
    if kind in _MULTI_KEY:
        return {_MULTI_KEY[kind]: _multi(raw)}
    return {"value": _single(raw)}


def initial_input(element: JsonObject) -> UserInput:
    """What the element holds before the user touches it."""
    kind = element.get("type")
    if "initial_option" in element:
        return str(element["initial_option"].get("value"))
    if "initial_options" in element:
        return [str(o.get("value")) for o in element["initial_options"]]
    for key in ("initial_value", "initial_user", "initial_conversation", "initial_channel",
                "initial_date", "initial_time"):  # fmt: skip
        if key in element:
            return str(element[key])
    for key in ("initial_users", "initial_conversations", "initial_channels"):
        if key in element:
            return [str(v) for v in element[key]]
    return [] if kind in ("checkboxes",) or str(kind).startswith("multi_") else None


def action_entry(
    block_id: str, element: JsonObject, raw: UserInput, *, action_ts: str
) -> JsonObject:
    """One entry of a block_actions payload's `actions[]`."""
    kind = str(element.get("type"))
    entry: JsonObject = {
        "type": kind,
        "action_id": element.get("action_id", ""),
        "block_id": block_id,
        "action_ts": action_ts,
    }
    if kind == "button":
        entry["text"] = copy.deepcopy(element.get("text"))
        if "value" in element:
            entry["value"] = element["value"]
        if "style" in element:
            entry["style"] = element["style"]
        return entry
    entry.update(selection(element, raw))
    if "placeholder" in element:
        entry["placeholder"] = copy.deepcopy(element["placeholder"])
    return entry


def state_values(
    blocks: list[JsonObject], inputs: dict[str, dict[str, UserInput]]
) -> dict[str, Any]:
    """`view.state.values` for a view's input elements: the user's inputs where given, each
    element's initial value elsewhere."""
    values: dict[str, dict[str, JsonObject]] = {}
    for block_id, element in iter_elements(blocks):
        kind = str(element.get("type"))
        if kind in ("button", "overflow"):
            continue
        action_id = str(element.get("action_id"))
        given = inputs.get(block_id, {})
        raw = given[action_id] if action_id in given else initial_input(element)
        values.setdefault(block_id, {})[action_id] = {"type": kind, **selection(element, raw)}
    return values


def missing_required(blocks: list[JsonObject], values: dict[str, Any]) -> dict[str, str]:
    """block_id → Slack's message for each required input block left empty."""
    errors: dict[str, str] = {}
    for block in blocks:
        if block.get("type") != "input" or block.get("optional", False):
            continue
        element = block.get("element", {})
        state = values.get(str(block.get("block_id")), {}).get(str(element.get("action_id")), {})
        filled = [v for k, v in state.items() if k != "type" and v not in (None, "", [])]
        if not filled:
            errors[str(block.get("block_id"))] = "Please complete this required field."
    return errors
