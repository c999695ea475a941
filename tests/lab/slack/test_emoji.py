"""The workspace's emoji list: what the page shows, and what the message checks read."""

from __future__ import annotations

import json
import urllib.request

from lab.slack import SlackWorkspace
from lab.slack.emoji import KNOWN_EMOJI, emoji_codes, unknown_emoji


def test_the_page_gets_the_list_the_checks_read(workspace: SlackWorkspace) -> None:
    with urllib.request.urlopen(f"{workspace.url}/static/emoji.js") as asset:
        assert "javascript" in asset.headers["Content-Type"]
        script = asset.read().decode()
    with urllib.request.urlopen(f"{workspace.url}/") as page:
        html = page.read().decode()
    assert html.index("/static/emoji.js") < html.index("/static/blocks.js")
    prefix, _, rest = script.partition("=")
    assert prefix.strip() == "window.SLACK_EMOJI"
    assert json.loads(rest.strip().rstrip(";")) == dict(KNOWN_EMOJI)


def test_codes_outside_code_mentions_and_links() -> None:
    text = ":sos: *Escalated* `system:serviceaccount:x` <@U1> <https://a/:b:|c> :nope:\n```:x:```"
    assert emoji_codes(text) == ["sos", "nope"]
    assert unknown_emoji(text) == ["nope"]
    assert unknown_emoji("at 10:30:15 UTC") == []
