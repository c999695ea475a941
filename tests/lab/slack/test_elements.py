"""What inputs become on the wire (view.state.values, actions[]), and the schema checks of
the less common elements. Pure functions; no server."""

from __future__ import annotations

from typing import Any

import pytest

from lab.slack.blocks import check_message_blocks, normalise
from lab.slack.elements import ElementInputError, action_entry, missing_required, state_values


def option(value: str) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": value.upper()}, "value": value}


def input_block(
    block_id: str, element: dict[str, Any], *, optional: bool = False
) -> dict[str, Any]:
    return {
        "type": "input",
        "block_id": block_id,
        "optional": optional,
        "label": {"type": "plain_text", "text": block_id},
        "element": element,
    }


FORM = [
    input_block("who", {"type": "users_select", "action_id": "user", "initial_user": "U0BOB0002"}),
    input_block("team", {"type": "multi_users_select", "action_id": "users"}, optional=True),
    input_block(
        "checks",
        {"type": "checkboxes", "action_id": "boxes", "options": [option("a"), option("b")]},
        optional=True,
    ),
    input_block(
        "grouped",
        {
            "type": "static_select",
            "action_id": "pick",
            "option_groups": [
                {
                    "label": {"type": "plain_text", "text": "G"},
                    "options": [option("x"), option("y")],
                }
            ],
        },
    ),
    input_block("when", {"type": "datepicker", "action_id": "date"}, optional=True),
    input_block("where", {"type": "channels_select", "action_id": "channel"}, optional=True),
]


def test_state_values_take_slacks_shapes() -> None:
    values = state_values(
        FORM,
        {
            "team": {"users": ["U0ALICE01", "U0DANA004"]},
            "checks": {"boxes": ["b"]},
            "grouped": {"pick": "y"},
            "when": {"date": "2026-11-30"},
        },
    )
    assert values["who"]["user"] == {"type": "users_select", "selected_user": "U0BOB0002"}
    assert values["team"]["users"]["selected_users"] == ["U0ALICE01", "U0DANA004"]
    assert values["checks"]["boxes"]["selected_options"] == [option("b")]
    assert values["grouped"]["pick"]["selected_option"] == option("y")
    assert values["when"]["date"] == {"type": "datepicker", "selected_date": "2026-11-30"}
    assert values["where"]["channel"] == {"type": "channels_select", "selected_channel": None}
    assert missing_required(FORM, values) == {}
    empty = state_values(FORM, {"who": {"user": None}})
    assert missing_required(FORM, empty) == {
        "who": "Please complete this required field.",
        "grouped": "Please complete this required field.",
    }


def test_inputs_that_do_not_fit() -> None:
    with pytest.raises(ElementInputError):
        state_values(FORM, {"grouped": {"pick": "z"}})
    with pytest.raises(ElementInputError):
        state_values(FORM, {"grouped": {"pick": ["x", "y"]}})


def test_action_entries() -> None:
    overflow = {
        "type": "overflow",
        "action_id": "more",
        "options": [option("logs"), option("undo")],
    }
    entry = action_entry("b1", overflow, "undo", action_ts="1.000001")
    assert entry == {
        "type": "overflow",
        "action_id": "more",
        "block_id": "b1",
        "action_ts": "1.000001",
        "selected_option": option("undo"),
    }
    danger = {
        "type": "button",
        "action_id": "undo",
        "style": "danger",
        "value": "tx-1",
        "text": {"type": "plain_text", "text": "Undo"},
    }
    assert action_entry("b2", danger, None, action_ts="1.000002")["style"] == "danger"


def test_less_common_blocks_pass_and_fail_like_slack() -> None:
    fine = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": "Actions"},
            "accessory": {"type": "overflow", "action_id": "more", "options": [option("a")]},
        },
        {
            "type": "context",
            "elements": [
                {"type": "image", "image_url": "http://127.0.0.1/i.png", "alt_text": "icon"},
                {"type": "mrkdwn", "text": "by Stratus"},
            ],
        },
        {"type": "image", "image_url": "http://127.0.0.1/c.png", "alt_text": "chart"},
        {"type": "rich_text", "elements": []},
        {
            "type": "actions",
            "elements": [
                {"type": "checkboxes", "action_id": "c", "options": [option("a")]},
                {"type": "radio_buttons", "action_id": "r", "options": [option("a")]},
            ],
        },
    ]
    assert check_message_blocks(fine) == []
    long_option = {"text": {"type": "plain_text", "text": "Long"}, "value": "v" * 151}
    long_value = {"type": "static_select", "action_id": "s", "options": [long_option]}
    assert check_message_blocks([{"type": "actions", "elements": [long_value]}]) == [
        "must be less than 151 characters [json-pointer:/blocks/0/elements/0/options/0/value]"
    ]
    crowded = {"type": "overflow", "action_id": "o", "options": [option(str(i)) for i in range(6)]}
    assert check_message_blocks([{"type": "actions", "elements": [crowded]}]) == [
        "no more than 5 items allowed [json-pointer:/blocks/0/elements/0/options]"
    ]
    confirm = {
        "title": {"type": "plain_text", "text": "Sure?"},
        "text": {"type": "mrkdwn", "text": "x" * 301},
        "confirm": {"type": "plain_text", "text": "Yes"},
        "deny": {"type": "plain_text", "text": "No"},
    }
    button = {"type": "button", "text": {"type": "plain_text", "text": "Go"}, "confirm": confirm}
    assert check_message_blocks([{"type": "actions", "elements": [button]}]) == [
        "must be less than 301 characters [json-pointer:/blocks/0/elements/0/confirm/text/text]"
    ]
    assert check_message_blocks([{"type": "context", "elements": []}]) == [
        "must provide at least 1 items [json-pointer:/blocks/0/elements]"
    ]


def test_normalise_fills_ids_without_touching_the_input() -> None:
    original = [
        {
            "type": "section",
            "text": {"type": "plain_text", "text": "x"},
            "accessory": option("a") | {"type": "button"},
        }
    ]
    counter = iter(range(100))
    filled = normalise(original, lambda: f"id{next(counter)}")
    assert filled[0]["block_id"] == "id0"
    assert filled[0]["accessory"]["action_id"] == "id1"
    assert "block_id" not in original[0]
