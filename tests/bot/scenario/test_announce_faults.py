"""The #incidents announcement survives a transient failure to join #incidents (issue 14's
matrix: `slack:conversations.join` × 503 lost it — it is posted once, never re-rendered)."""

from __future__ import annotations

from dataclasses import replace

from bot.ids import MessageKind
from bot.slack_io import RATE_LIMIT_RETRIES
from lab.faults import fault
from lab.slack import WorkspaceConfig
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL


def test_the_announcement_is_posted_after_a_failed_join(make_lab: MakeLab) -> None:
    config = WorkspaceConfig()
    nobody_invited_the_bot = tuple(
        replace(c, bot_member=False) if c.name == "incidents" else c for c in config.channels
    )
    lab = make_lab(workspace=replace(config, channels=nobody_invited_the_bot))
    # More 429s than the client retries: the first join fails, the next try passes.
    lab.ws.inject_rate_limit("conversations.join", count=RATE_LIMIT_RETRIES + 2)
    fault("wrong-target-port").inject(lab.world, app=HOTEL)
    incident = lab.incident()

    announce = lab.wait_message(incident.id, MessageKind.ANNOUNCE, timeout=60)
    incidents = lab.ws.channel_by_name("incidents")
    assert incidents is not None
    assert announce["ts"] in {m["ts"] for m in lab.ws.messages(incidents["id"])}
