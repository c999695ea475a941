"""A restart between the plan and its approval: the new process finds the incident's channel
and messages in storage, the old message's Approve button works, and the messages are
updated in place rather than posted again."""

from __future__ import annotations

from agents.model import IncidentState
from bot.ids import ActionId, MessageKind
from lab.faults import fault
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL, buttons, text_of

S = IncidentState


def test_a_restarted_bot_resumes_the_incident_and_updates_its_messages(make_lab: MakeLab) -> None:
    lab = make_lab()
    ws, store = lab.ws, lab.services.store
    fault("wrong-target-port").inject(lab.world, app=HOTEL)
    incident = lab.incident()
    lab.wait_message(
        incident.id, MessageKind.PLAN, predicate=lambda m: ActionId.APPROVE in buttons(m)
    )
    channel, plan_ts = lab.message_ref(incident.id, MessageKind.PLAN) or ("", "")
    lab.services.wait_idle(30)
    before = {(r.kind, r.ref): r.ts for r in store.slack_messages.find(incident_id=incident.id)}
    channels_before = {c["id"] for c in lab.services.slack.client.conversations_list()["channels"]}

    lab.restart_bot()
    store = lab.services.store
    assert ws.click("alice", channel, plan_ts, ActionId.APPROVE).acked
    lab.wait_state(incident.id, S.CLOSED, S.ESCALATED, timeout=120)
    assert lab.state(incident.id) is S.CLOSED

    # The same messages, updated in place; nothing posted twice; no second channel.
    lab.wait_message(incident.id, MessageKind.CLOSED)
    after = {(r.kind, r.ref): r.ts for r in store.slack_messages.find(incident_id=incident.id)}
    assert {k: after[k] for k in before} == before
    plan = ws.message(channel, plan_ts)
    assert plan is not None and ActionId.APPROVE not in buttons(plan)
    assert "Approved by" in text_of(plan)
    summary = lab.wait_message(
        incident.id, MessageKind.SUMMARY, predicate=lambda m: "Closed" in text_of(m)
    )
    assert summary["ts"] == before[(MessageKind.SUMMARY.value, incident.id)]
    channels_after = {c["id"] for c in lab.services.slack.client.conversations_list()["channels"]}
    assert channels_after == channels_before
    top_level = [m for m in ws.messages(channel) if m.get("bot_id")]
    plan_messages = [m for m in top_level if "Plan for" in text_of(m)]
    assert len(plan_messages) == 1
