"""Block Kit limits: what Slack refuses with invalid_blocks, checked with the real WebClient."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lab.slack.blocks import check_view


def section(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}, **extra}


def button(**extra: Any) -> dict[str, Any]:
    return {"type": "button", "text": {"type": "plain_text", "text": "Approve"}, **extra}


def refused(client: WebClient, blocks: Any) -> list[str]:
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="incidents", text="fallback", blocks=blocks)
    assert caught.value.response["error"] == "invalid_blocks"
    errors: list[str] = caught.value.response["errors"]
    assert caught.value.response["response_metadata"]["messages"]
    return errors


def test_section_text_limit(client: WebClient) -> None:
    assert client.chat_postMessage(channel="incidents", text="t", blocks=[section("x" * 3000)])[
        "ok"
    ]
    errors = refused(client, [section("x" * 3001)])
    assert errors == ["must be less than 3001 characters [json-pointer:/blocks/0/text/text]"]


def test_block_count_limit(client: WebClient) -> None:
    assert client.chat_postMessage(
        channel="incidents", text="t", blocks=[{"type": "divider"}] * 50
    )["ok"]
    assert refused(client, [{"type": "divider"}] * 51) == [
        "no more than 50 items allowed [json-pointer:/blocks]"
    ]


@pytest.mark.parametrize(
    ("element", "pointer"),
    [
        (button(value="v" * 2001), "/blocks/0/elements/0/value"),
        (button(action_id="a" * 256), "/blocks/0/elements/0/action_id"),
        (button(style="fancy"), "/blocks/0/elements/0/style"),
        (
            {"type": "button", "text": {"type": "plain_text", "text": "x" * 76}},
            "/blocks/0/elements/0/text/text",
        ),
    ],
)
def test_button_limits(client: WebClient, element: dict[str, Any], pointer: str) -> None:
    errors = refused(client, [{"type": "actions", "elements": [element]}])
    assert len(errors) == 1 and errors[0].endswith(f"[json-pointer:{pointer}]")


def test_limits_at_the_boundary_are_accepted(client: WebClient) -> None:
    blocks = [
        {
            "type": "actions",
            "block_id": "b" * 255,
            "elements": [button(value="v" * 2000, action_id="a" * 255)],
        }
    ]
    assert client.chat_postMessage(channel="incidents", text="t", blocks=blocks)["ok"]


def test_other_schema_errors(client: WebClient) -> None:
    assert refused(client, [{"type": "divider", "block_id": "b" * 256}])[0].endswith(
        "[json-pointer:/blocks/0/block_id]"
    )
    assert (
        "duplicate block_id"
        in refused(
            client, [{"type": "divider", "block_id": "x"}, {"type": "divider", "block_id": "x"}]
        )[0]
    )
    assert "unsupported block type" in refused(client, [{"type": "carousel"}])[0]
    header = {"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}
    assert refused(client, [header])[0].endswith("[json-pointer:/blocks/0/text/text]")
    fields = [{"type": "mrkdwn", "text": "f"}] * 11
    assert refused(client, [{"type": "section", "fields": fields}])[0].endswith(
        "[json-pointer:/blocks/0/fields]"
    )
    assert "must provide either text or fields" in refused(client, [{"type": "section"}])[0]
    image = {"type": "image", "image_url": "http://127.0.0.1/x.png"}
    assert refused(client, [image])[0].endswith("[json-pointer:/blocks/0/alt_text]")


def test_blocks_that_are_not_a_list(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as caught:
        client.api_call(
            "chat.postMessage", params={"channel": "incidents", "text": "t", "blocks": "{}"}
        )
    assert caught.value.response["error"] == "invalid_blocks_format"


def test_update_checks_blocks_too(client: WebClient) -> None:
    posted = client.chat_postMessage(channel="incidents", text="t")
    with pytest.raises(SlackApiError) as caught:
        client.chat_update(
            channel=posted["channel"], ts=posted["ts"], text="t", blocks=[section("x" * 3001)]
        )
    assert caught.value.response["error"] == "invalid_blocks"


def modal(**extra: Any) -> dict[str, Any]:
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": "Reject plan"},
        "blocks": [],
        **extra,
    }


def test_view_rules() -> None:
    assert check_view(modal()) == []
    too_long = modal(title={"type": "plain_text", "text": "t" * 25})
    assert check_view(too_long) == [
        "must be less than 25 characters [json-pointer:/view/title/text]"
    ]
    input_block = {
        "type": "input",
        "label": {"type": "plain_text", "text": "Why?"},
        "element": {"type": "plain_text_input", "action_id": "why"},
    }
    assert "submit is required" in check_view(modal(blocks=[input_block]))[0]
    with_submit = modal(blocks=[input_block], submit={"type": "plain_text", "text": "Reject"})
    assert check_view(with_submit) == []
    assert check_view({"type": "sheet", "blocks": []}) == [
        "must be a valid enum value [json-pointer:/view/type]"
    ]
    assert check_view({"type": "home", "blocks": [{"type": "divider"}] * 101}) == [
        "no more than 100 items allowed [json-pointer:/view/blocks]"
    ]
