"""The Undo modal when Slack fails (issue 14's transient-fault matrix): a click whose modal
cannot open still undoes (`slack:views.open` × 503 lost the click, so the person had to press
Undo again), and a modal whose update fails once still ends with the result
(`slack:views.update` × 503 left it saying "Undoing…")."""

from __future__ import annotations

from agents.model import IncidentState, TransactionStatus
from bot.ids import ActionId, MessageKind
from bot.slack_io import RATE_LIMIT_RETRIES
from lab.faults import fault
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL, BotLab, buttons, text_of

S = IncidentState


def _committed(lab: BotLab) -> tuple[str, str, str, str]:
    """Break geo, approve the plan; (incident id, transaction id, channel, outcome ts)."""
    fault("wrong-target-port").inject(lab.world, app=HOTEL)
    incident = lab.incident()
    lab.wait_state(incident.id, S.AWAITING_APPROVAL)
    lab.wait_message(
        incident.id, MessageKind.PLAN, predicate=lambda m: ActionId.APPROVE in buttons(m)
    )
    channel, plan_ts = lab.message_ref(incident.id, MessageKind.PLAN) or ("", "")
    lab.ws.click("alice", channel, plan_ts, ActionId.APPROVE)
    lab.wait_state(incident.id, S.CLOSED, S.ESCALATED, timeout=120)
    [tx] = lab.services.brain.machine.transactions(incident.id)
    assert tx.status is TransactionStatus.COMMITTED
    outcome = lab.wait_message(
        incident.id, MessageKind.OUTCOME, tx.id, predicate=lambda m: ActionId.UNDO in buttons(m)
    )
    return incident.id, tx.id, channel, outcome["ts"]


def test_undo_runs_when_its_modal_fails_to_open(make_lab: MakeLab) -> None:
    lab = make_lab()
    ws = lab.ws
    incident_id, tx_id, channel, outcome_ts = _committed(lab)

    # Every try of views.open is refused (more 429s than the client retries), once.
    ws.inject_rate_limit("views.open", count=20)
    ws.click("alice", channel, outcome_ts, ActionId.UNDO)

    ledger = lab.services.brain.engine.ledger
    lab.wait("the undo", lambda: ledger.transaction(tx_id).status is TransactionStatus.UNDONE, 60)
    assert ws.views("alice") == []
    undone = lab.wait_message(incident_id, MessageKind.UNDO, tx_id)
    assert "restored 1 object" in text_of(undone)


def test_the_undo_modal_shows_the_result_after_a_failed_update(make_lab: MakeLab) -> None:
    lab = make_lab()
    ws = lab.ws
    _, tx_id, channel, outcome_ts = _committed(lab)

    # More 429s than the client retries: the first views.update fails, the next try passes.
    ws.inject_rate_limit("views.update", count=RATE_LIMIT_RETRIES + 2)
    ws.click("alice", channel, outcome_ts, ActionId.UNDO)

    lab.wait(
        "the undo result in the modal",
        lambda: [v for v in ws.views("alice") if "Undone" in text_of(v)],
        60,
    )
    ledger = lab.services.brain.engine.ledger
    assert ledger.transaction(tx_id).status is TransactionStatus.UNDONE
