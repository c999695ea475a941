"""The whole loop through Slack, in Socket Mode and in HTTP mode: an Alertmanager webhook opens
an incident with its own channel; a person without approval rights is refused; a double click
on Approve runs one transaction, whose progress message is updated in place and whose outcome
carries Undo; Undo puts the cluster object back. HTTP mode also refuses forged and stale
requests without changing anything."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agents.model import IncidentState, PlanStatus, TransactionStatus
from bot.channels import root_cause_name
from bot.ids import ActionId, MessageKind
from lab.faults import fault
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL, BotLab, buttons, text_of

S = IncidentState


def geo_spec(lab: BotLab) -> dict[str, Any]:
    service = lab.world.api.get("Service", HOTEL, "geo")
    assert service is not None
    spec: dict[str, Any] = service["spec"]
    return spec


def ephemeral_texts(lab: BotLab, channel: str, user: str) -> list[str]:
    """What Stratus told `user` (not what the workspace itself says, e.g. after a 401)."""
    return [m["text"] for m in lab.ws.ephemerals(channel, user) if m.get("bot_id")]


@pytest.mark.parametrize("mode", ["socket", "http"])
def test_approve_runs_one_transaction_and_undo_restores_the_object(
    make_lab: MakeLab, mode: str
) -> None:
    lab = make_lab(mode=mode)
    ws, store = lab.ws, lab.services.store
    original = geo_spec(lab)
    fault("wrong-target-port").inject(lab.world, app=HOTEL)
    broken = geo_spec(lab)
    assert broken != original

    # The webhook opens one incident, in its own channel, with the responders invited.
    incident = lab.incident()
    assert incident.source == "alertmanager"
    lab.wait_state(incident.id, S.AWAITING_APPROVAL)
    plan_message = lab.wait_message(
        incident.id, MessageKind.PLAN, predicate=lambda m: ActionId.APPROVE in buttons(m)
    )
    channel, plan_ts = lab.message_ref(incident.id, MessageKind.PLAN) or ("", "")
    info = ws.channel(channel)
    # Named after the diagnosed root cause (geo), not the symptom the alerts pointed at.
    assert info["name"] == root_cause_name(incident.id, "geo", cluster="lab")
    assert "-geo-" in info["name"] and "root cause geo" in info["topic"]["value"]
    assert info["name"].startswith("inc-20260105-lab-")  # the harness's STRATUS_CLUSTER_NAME
    members = lab.services.slack.members(channel)
    assert {"U0ALICE01", "U0BOB0002"} <= members  # @sre-approvers, resolved to its members
    opened = lab.wait_message(incident.id, MessageKind.OPENED)
    assert incident.id in text_of(opened)
    diagnosis = lab.wait_message(incident.id, MessageKind.DIAGNOSIS)
    assert "geo" in text_of(diagnosis) and ActionId.DETAILS in buttons(diagnosis)
    assert "Set port " in text_of(plan_message) and "targetPort" in text_of(plan_message)
    chart = lab.wait(
        "the diagnosis chart",
        lambda: [f for f in ws.files() if f["name"] == f"{incident.id}-signals.png"],
    )
    assert ws.file_bytes(chart[0]["id"]).startswith(b"\x89PNG")
    summary = lab.message_ref(incident.id, MessageKind.SUMMARY)
    assert summary is not None and summary[1] in {p["ts"] for p in ws.pins(channel)}
    announce = lab.message_ref(incident.id, MessageKind.ANNOUNCE)
    assert announce is not None and ws.channel(announce[0])["name"] == "incidents"
    [plan] = [p for p in lab.services.brain.machine.plans(incident.id) if p.rank == 0]

    # Details opens a modal with the evidence.
    ws.click("alice", channel, diagnosis["ts"], ActionId.DETAILS)
    lab.wait("the evidence modal", lambda: [v for v in ws.views("alice") if "geo" in text_of(v)])

    # Someone who is not an approver is refused: an ephemeral message and an audit record.
    ws.join_channel("carol", channel)
    refused = ws.click("carol", channel, plan_ts, ActionId.APPROVE)
    assert refused.acked
    lab.wait(
        "carol's refusal",
        lambda: any("not an approver" in t for t in ephemeral_texts(lab, channel, "carol")),
    )
    refusals = store.audit.query(incident_id=incident.id, verb="refuse", actor="U0CAROL03")
    assert len(refusals) == 1 and refusals[0].detail["plan"] == plan.id
    assert lab.services.brain.machine.plan(plan.id).status is PlanStatus.PROPOSED

    if mode == "http":
        # Forged signatures and stale timestamps get 401 and change nothing.
        for forge in ({"secret": "not-the-signing-secret"}, {"clock_skew_s": -400.0}):
            ws.sign_requests(**forge)
            delivery = ws.click("alice", channel, plan_ts, ActionId.APPROVE)
            assert delivery.status == 401 and not delivery.acked, delivery
        ws.sign_requests()
        assert store.approvals.list_for_plan(plan.id) == []
        assert lab.state(incident.id) is S.AWAITING_APPROVAL

    # A double click on Approve: both delivered, one decision (the repeat is coalesced), one
    # transaction.
    with ThreadPoolExecutor(2) as pool:
        clicks = list(
            pool.map(lambda _: ws.click("alice", channel, plan_ts, ActionId.APPROVE), range(2))
        )
    assert all(c.acked for c in clicks)
    lab.wait_state(incident.id, S.CLOSED, S.ESCALATED, timeout=120)
    assert lab.state(incident.id) is S.CLOSED
    lab.wait("alice's answer", lambda: ephemeral_texts(lab, channel, "alice"))
    answers = ephemeral_texts(lab, channel, "alice")
    assert answers[0] == "Approved: running the transaction."
    # A repeat arriving after the decision's 2 s window would be told where the plan stands.
    assert set(answers[1:]) <= {"This plan is already approved."}
    [tx] = lab.services.brain.machine.transactions(incident.id)
    assert tx.status is TransactionStatus.COMMITTED and tx.plan_id == plan.id
    assert len(store.approvals.list_for_plan(plan.id)) == 1
    assert geo_spec(lab) == original

    # The progress message was updated in place; the outcome carries Undo.
    progress = lab.wait_message(
        incident.id, MessageKind.TRANSACTION, tx.id, predicate=lambda m: "Committed" in text_of(m)
    )
    assert progress.get("edited"), "the progress message is edited, not reposted"
    assert len(store.slack_messages.find(kind=MessageKind.TRANSACTION.value, ref=tx.id)) == 1
    outcome = lab.wait_message(
        incident.id, MessageKind.OUTCOME, tx.id, predicate=lambda m: ActionId.UNDO in buttons(m)
    )
    assert "confirm" in buttons(outcome)[ActionId.UNDO]
    lab.wait_message(incident.id, MessageKind.CLOSED)
    plan_after = lab.wait_message(
        incident.id, MessageKind.PLAN, predicate=lambda m: ActionId.APPROVE not in buttons(m)
    )
    assert "Approved by" in text_of(plan_after)

    # Undo puts the Service back as it was before the transaction.
    ws.click("alice", channel, outcome["ts"], ActionId.UNDO)
    lab.wait(
        "the undo result in the modal",
        lambda: [v for v in ws.views("alice") if "Undone" in text_of(v)],
    )
    assert geo_spec(lab) == broken
    assert lab.services.brain.engine.ledger.transaction(tx.id).status is TransactionStatus.UNDONE
    lab.wait_message(
        incident.id, MessageKind.OUTCOME, tx.id, predicate=lambda m: "Undone by" in text_of(m)
    )
    undone = lab.wait_message(incident.id, MessageKind.UNDO, tx.id)
    assert "restored 1 object" in text_of(undone)
    kinds = {r.kind for r in store.slack_messages.find(incident_id=incident.id)}
    assert {
        k.value
        for k in (
            MessageKind.SUMMARY,
            MessageKind.OPENED,
            MessageKind.DIAGNOSIS,
            MessageKind.PLAN,
            MessageKind.TRANSACTION,
            MessageKind.OUTCOME,
            MessageKind.UNDO,
            MessageKind.CLOSED,
        )
    } <= kinds
    assert lab.forwarder.answers and set(lab.forwarder.answers) == {200}
