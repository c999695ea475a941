"""The same surfaces in HTTP mode: the workspace POSTs signed requests to the bot's own
endpoint (`/slack/events`), and Bolt verifies them before any listener runs."""

from __future__ import annotations

from pathlib import Path

from agents.model import IncidentState
from tests.bot.commands.stand import HOTEL, TIMEOUT, make_stand


def test_commands_and_the_home_over_http(tmp_path: Path) -> None:
    with make_stand(tmp_path, mode="http") as bot:
        incident = bot.seed_incident(state=IncidentState.AWAITING_APPROVAL)
        bot.seed_plan(incident)
        delivery = bot.command("alice", "status")
        assert delivery.transport == "http" and delivery.status == 200
        shown = bot.ephemeral("incidents", "alice", "Health by namespace")
        assert f"*{HOTEL}*" in str(shown["blocks"])
        bot.ws.open_app_home("alice")
        home = bot.ws.wait_until(lambda: bot.ws.home_view("alice"), TIMEOUT)
        assert "Waiting for your approval* (1)" in str(home["blocks"])

        bot.ws.sign_requests(secret="not-the-secret")
        forged = bot.ws.slash_command("alice", "/stratus", "incidents", channel="incidents")
        assert not forged.acked and forged.status == 401
