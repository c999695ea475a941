"""The `text` field (what Slack shows in notifications, parsed as mrkdwn) is escaped like the
blocks: an alert or a `/stratus declare` titled `<!channel>` or `<http://x|click>` neither
notifies the channel nor links anywhere."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.model import Incident
from bot.commands.render import render_declared
from bot.render import Message, render_announce, render_opened
from bot.render.blocks import FALLBACK_TEXT_MAX
from tests.bot.render import strategies as s

HOSTILE = "<!channel> & <http://x|click> <@U0123> <!here>"
ESCAPED = "&lt;!channel&gt; &amp; &lt;http://x|click&gt; &lt;@U0123&gt; &lt;!here&gt;"


def texts(incident: Incident) -> list[Message]:
    return [
        render_opened(incident, []),
        render_announce(incident, "C0123ABCD"),
        render_declared(incident, joined=False, user="U0ALICE"),
        render_declared(incident, joined=True, user="U0ALICE"),
    ]


@settings(max_examples=20, deadline=None)
@given(s.incidents())
def test_hostile_titles_are_escaped_in_the_notification_text(incident: Incident) -> None:
    for message in texts(replace(incident, title=HOSTILE)):
        text, _ = message.payload()
        assert ESCAPED in text, text
        assert "<" not in text and ">" not in text


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_escaped_once(raw: str) -> None:
    text, _ = Message(text=raw, blocks=()).payload()
    assert "<" not in text and ">" not in text
    if raw.strip() and len(text) < FALLBACK_TEXT_MAX:
        assert text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") == raw
