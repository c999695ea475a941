"""Repeated clicks of one person on one plan's button collapse into one queued decision, so
another person's decision is not queued behind them (the delay is measured by
benchmarks/click_fairness.py; this checks the state: how many decisions were made)."""

from __future__ import annotations

import threading
from pathlib import Path

from agents.model import IncidentState
from bot.workers import Origin
from tests.bot.commands.stand import TIMEOUT, make_stand

ALICE, BOB = "U0ALICE01", "U0BOB0002"


def test_fifty_clicks_of_one_person_are_one_decision(tmp_path: Path) -> None:
    with make_stand(tmp_path) as bot:
        incident = bot.seed_incident(state=IncidentState.AWAITING_APPROVAL)
        plan = bot.seed_plan(incident)
        ops, lanes = bot.services.incidents, bot.services.work
        ops.repeat_window_s = 0.0  # only what is waiting or running absorbs repeats here
        # Hold the plan's lane, as a slow decision would, while the clicks arrive.
        release = threading.Event()
        lanes.submit(f"plan:{plan.id}", lambda: release.wait(TIMEOUT), Origin(what="hold"))
        for _ in range(50):
            ops.approve(
                plan_id=plan.id, content_hash=plan.content_hash, user=ALICE, channel="incidents"
            )
        ops.approve(plan_id=plan.id, content_hash=plan.content_hash, user=BOB, channel="incidents")
        release.set()
        assert lanes.wait_idle(TIMEOUT)
        assert len(bot.ws.ephemerals("incidents", "alice")) == 1
        assert len(bot.ws.ephemerals("incidents", "bob")) == 1
        # Once decided, a new click is decided again (and told where the plan stands)...
        click = {"plan_id": plan.id, "content_hash": plan.content_hash, "channel": "incidents"}
        ops.approve(user=ALICE, **click)
        assert lanes.wait_idle(TIMEOUT)
        assert len(bot.ws.ephemerals("incidents", "alice")) == 2
        # ... unless it repeats a decision made within the repeat window.
        ops.repeat_window_s = 600.0
        ops.approve(user=ALICE, **click)
        assert lanes.wait_idle(TIMEOUT)
        ops.approve(user=ALICE, **click)
        assert lanes.wait_idle(TIMEOUT)
        assert len(bot.ws.ephemerals("incidents", "alice")) == 3
