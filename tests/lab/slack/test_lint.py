"""The message rules: each finds the defect it is named after, and nothing in ordinary text."""

from __future__ import annotations

import pytest

from lab.slack.lint import message_problems, text_problems


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("3 new alerts (A, B) (A, B)", "'(A, B)' twice in a row"),
        ("geo: geo: 74% of its CPU limit", "'geo:' twice in a row"),
        ("while 1 pods are Ready", "'1 pods' (plural after one)"),
        ("3 incident opened", "'3 incident' (singular after 3)"),
        ("undone by U0ALICE01", "raw user id U0ALICE01 (not a <@mention>)"),
        ("Approved by &lt;@U0ALICE01&gt;", "raw user id U0ALICE01 (not a <@mention>)"),
        (":flying_saucer: hello", "emoji :flying_saucer: is unknown to the workspace"),
    ],
)
def test_each_rule_finds_its_defect(text: str, problem: str) -> None:
    assert problem in text_problems(text)


@pytest.mark.parametrize(
    "text",
    [
        "Opened 2026-01-05 10:00:00 UTC by <@U0ALICE01> :sos: :raised_hand:",
        "1 pod is Ready; 1/3 pods ready; 2 pods; 1 status",
        "`system:serviceaccount:x` and ```geo: geo:``` in code",
        "Also considered: `geo` network (61%); `search` network (61%)",
        "rpc error: code = Unknown desc = rpc error: code = Unknown desc = EOF",
        "▰▰▰▰▰▱▱▱▱▱ 1/2",
    ],
)
def test_ordinary_text_is_fine(text: str) -> None:
    assert text_problems(text) == []


def test_a_line_said_twice_in_one_message() -> None:
    explanation = "Service geo sends port 8083 to targetPort 9999"
    message = {
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*Root cause*\n{explanation}"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": f"geo (97%) — {explanation}"}},
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Undo"},
                        "confirm": {"text": {"type": "mrkdwn", "text": explanation}},
                    }
                ],
            },
        ]
    }
    assert message_problems(message) == [f"'{explanation}' said 2 times"]
