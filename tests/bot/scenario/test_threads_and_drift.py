"""Thread mode: the incident lives in one thread of the incidents channel, under its pinned
summary. And an Undo after someone changed the object since the commit: the drift is shown
in a modal, and only an explicit confirmation overwrites their change."""

from __future__ import annotations

from agents.model import IncidentState, TransactionStatus
from bot.ids import ActionId, MessageKind
from lab.faults import fault
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL, buttons, text_of

S = IncidentState


def test_thread_mode_and_an_undo_that_must_confirm_drift(make_lab: MakeLab) -> None:
    lab = make_lab(settings={"STRATUS_CHANNEL_MODE": "thread"})
    ws, store = lab.ws, lab.services.store
    fault("wrong-target-port").inject(lab.world, app=HOTEL)
    broken = lab.world.api.get("Service", HOTEL, "geo")
    assert broken is not None
    incident = lab.incident()
    lab.wait_message(
        incident.id, MessageKind.PLAN, predicate=lambda m: ActionId.APPROVE in buttons(m)
    )

    # Everything is in the summary's thread in #incidents; the summary is pinned there.
    summary = lab.message_ref(incident.id, MessageKind.SUMMARY)
    assert summary is not None
    channel, root = summary
    assert ws.channel(channel)["name"] == "incidents"
    assert root in {p["ts"] for p in ws.pins(channel)}
    rows = store.slack_messages.find(incident_id=incident.id)
    assert {r.channel for r in rows} == {channel}
    assert {r.thread_ts for r in rows} == {root}
    thread = ws.messages(channel, thread_ts=root)
    plan_ts = (lab.message_ref(incident.id, MessageKind.PLAN) or ("", ""))[1]
    assert plan_ts in {m["ts"] for m in thread}
    assert [m["ts"] for m in ws.messages(channel) if m.get("bot_id")] == [root]

    assert ws.click("bob", channel, plan_ts, ActionId.APPROVE).acked
    lab.wait_state(incident.id, S.CLOSED, S.ESCALATED, timeout=120)
    [tx] = lab.services.brain.machine.transactions(incident.id)
    assert tx.status is TransactionStatus.COMMITTED
    outcome = lab.wait_message(
        incident.id, MessageKind.OUTCOME, tx.id, predicate=lambda m: ActionId.UNDO in buttons(m)
    )

    # Someone changes the Service after the commit.
    lab.world.api.patch(
        "Service",
        HOTEL,
        "geo",
        {"metadata": {"labels": {"owner": "carol"}}},
        patch_type="merge",
        field_manager="kubectl",
    )
    ws.click("bob", channel, outcome["ts"], ActionId.UNDO)
    [drift] = lab.wait(
        "the drift modal",
        lambda: [v for v in ws.views("bob") if "someone changed the objects" in text_of(v)],
    )
    assert drift["title"]["text"] == "Objects changed"
    assert "Service/hotel-reservation/geo: metadata.labels.owner" in text_of(drift)
    current = lab.world.api.get("Service", HOTEL, "geo")
    assert current is not None and current["metadata"]["labels"]["owner"] == "carol"
    assert lab.services.brain.engine.ledger.transaction(tx.id).status is TransactionStatus.COMMITTED

    # Only the explicit confirmation overwrites it.
    assert ws.submit_view("bob", drift["id"], {}).acked
    [done] = lab.wait("the undo", lambda: store.audit.query(transaction_id=tx.id, verb="undone"))
    assert lab.services.brain.engine.ledger.transaction(tx.id).status is TransactionStatus.UNDONE
    restored = lab.world.api.get("Service", HOTEL, "geo")
    assert restored is not None
    assert restored["spec"] == broken["spec"]
    assert "owner" not in (restored["metadata"].get("labels") or {})
    undo = store.audit.query(transaction_id=tx.id, verb="undo")
    assert [r.detail["confirm_drift"] for r in undo] == [True]
    assert done.actor == "U0BOB0002" and done.detail["overwritten"]
    lab.wait(
        "the result in the modal",
        lambda: [v for v in ws.views("bob") if "Undone" in text_of(v)],
    )
    undone = lab.wait_message(incident.id, MessageKind.UNDO, tx.id)
    assert "overwrote" in text_of(undone)
