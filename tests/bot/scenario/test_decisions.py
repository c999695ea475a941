"""Decisions other than a plain approval, through Slack: an approval clicked after the plan
expired is refused and changes nothing, and the housekeeping job proposes again; Reject asks
for a reason in a modal and records it.
The Slack workspace answers the first posts with 429 and Retry-After: nothing is lost."""

from __future__ import annotations

from agents.model import IncidentState, PlanStatus
from bot.ids import ActionId, InputId, MessageKind
from lab.faults import fault
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL, buttons, text_of

S = IncidentState


def test_expired_approval_is_refused_and_a_rejection_records_its_reason(
    make_lab: MakeLab,
) -> None:
    # 60 lab seconds of approval TTL; no housekeeping, so the expired plan stays on screen.
    lab = make_lab(approval_ttl="60s", housekeeping_s=3600)
    ws, store, machine = lab.ws, lab.services.store, lab.services.brain.machine
    ws.inject_rate_limit("chat.postMessage", count=2, retry_after=1)
    fault("wrong-target-port").inject(lab.world, app=HOTEL)
    incident = lab.incident()
    lab.wait_message(
        incident.id, MessageKind.PLAN, predicate=lambda m: ActionId.APPROVE in buttons(m)
    )
    channel, plan_ts = lab.message_ref(incident.id, MessageKind.PLAN) or ("", "")

    # Rate limited twice, retried after Retry-After: every message is there.
    limited = [c for c in ws.calls("chat.postMessage") if c.status == 429]
    assert len(limited) == 2
    for kind in (MessageKind.SUMMARY, MessageKind.OPENED, MessageKind.DIAGNOSIS):
        lab.wait_message(incident.id, kind)
    exposition = lab.services.metrics.exposition().decode()
    assert (
        'stratus_slack_api_errors_total{error="ratelimited",method="chat.postMessage"} 2.0'
        in exposition
    )

    [plan] = [p for p in machine.plans(incident.id) if p.rank == 0]
    assert plan.expires_at is not None
    expires = plan.expires_at
    lab.wait("the approval to expire", lambda: lab.world.clock.now() > expires, timeout=30)
    assert ws.click("alice", channel, plan_ts, ActionId.APPROVE).acked
    lab.wait(
        "the refusal",
        lambda: any("expired" in m["text"] for m in ws.ephemerals(channel, "alice")),
    )
    refusal = store.audit.query(incident_id=incident.id, verb="refuse", actor="U0ALICE01")
    assert [r.detail["reason"] for r in refusal] == ["This approval request expired."]
    assert store.approvals.list_for_plan(plan.id) == []
    assert machine.transactions(incident.id) == []
    assert machine.plan(plan.id).status is PlanStatus.PROPOSED
    assert lab.state(incident.id) is S.AWAITING_APPROVAL

    # The housekeeping job (run here by hand) proposes again: the expired plan's message loses
    # its buttons, a new plan message carries them.
    lab.services.incidents.housekeeping()
    lab.wait("the expiry", lambda: machine.plan(plan.id).status is PlanStatus.EXPIRED)
    lab.wait_message(
        incident.id,
        MessageKind.PLAN,
        plan.id,
        predicate=lambda m: ActionId.APPROVE not in buttons(m) and "expired" in text_of(m),
    )
    fresh = lab.wait(
        "a new plan",
        lambda: [
            p
            for p in machine.plans(incident.id)
            if p.rank == 0 and p.id != plan.id and p.status is PlanStatus.PROPOSED
        ],
    )[0]
    lab.wait_message(
        incident.id, MessageKind.PLAN, fresh.id, predicate=lambda m: ActionId.APPROVE in buttons(m)
    )
    plan_ts = (lab.message_ref(incident.id, MessageKind.PLAN, fresh.id) or ("", ""))[1]
    plan = fresh

    # Reject: a modal asks why; too short a reason is refused in the modal itself.
    assert ws.click("bob", channel, plan_ts, ActionId.REJECT).acked
    [view] = lab.wait("the reject modal", lambda: ws.views("bob"))
    answer = ws.submit_view("bob", view["id"], {InputId.REJECT_REASON.value: "no"})
    assert answer.ack_payload is not None and answer.ack_payload["response_action"] == "errors"
    assert ws.views("bob"), "the modal stays open with the error"
    reason = "targetPort 9999 is intended; look at the pods instead"
    assert ws.submit_view("bob", view["id"], {InputId.REJECT_REASON.value: reason}).acked
    lab.wait("the rejection", lambda: machine.plan(plan.id).status is PlanStatus.REJECTED)
    rejected = machine.plan(plan.id)
    assert rejected.reject_reason == reason and rejected.decided_by == "U0BOB0002"
    lab.wait(
        "the rejection in the timeline",
        lambda: (
            f"Rejected by U0BOB0002: {reason}"
            in [e.message for e in store.incidents.timeline(incident.id)]
        ),
    )
    assert [r.actor for r in store.audit.query(incident_id=incident.id, verb="reject")] == [
        "U0BOB0002"
    ]
    decision = lab.wait_message(incident.id, MessageKind.DECISION, plan.id)
    assert reason in text_of(decision)
    lab.wait_message(
        incident.id,
        MessageKind.PLAN,
        plan.id,
        predicate=lambda m: ActionId.APPROVE not in buttons(m) and "Rejected by" in text_of(m),
    )
    assert machine.transactions(incident.id) == []
    # Stratus moves on: another plan, or an escalation when nothing else is admissible.
    lab.wait_state(incident.id, S.AWAITING_APPROVAL, S.ESCALATED, S.CLOSED)
