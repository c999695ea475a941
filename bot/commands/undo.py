"""`/stratus undo <transaction>`: the Undo button's flow, started from a command.

Exactly what a click on Undo does (`bot.listeners.actions`): open the "checking" modal at once
(a trigger id lives 3 seconds), then hand the undo to `IncidentOps.undo`, which runs it in the
scope's lane through `Approvals.undo` — authorisation, the refusal's audit record, LIFO order
across transactions and drift detection decided in one place — and replaces the modal with
the result, or with the drift modal that asks before overwriting someone else's change.
"""

from __future__ import annotations

import logging

from agents.model import TransactionId
from agents.tnr import UndoResult, UndoStatus
from bot.commands.context import CommandContext
from bot.render.transaction import render_undo_checking, render_undo_result
from storage import NotFound

logger = logging.getLogger(__name__)


def undo_in_modal(
    ctx: CommandContext, *, trigger_id: str, transaction_id: str, user: str, channel: str
) -> None:
    view_id = ctx.modals.open_view(trigger_id, render_undo_checking(transaction_id))
    try:
        ctx.ops.undo(transaction_id=transaction_id, user=user, channel=channel, view_id=view_id)
    except NotFound:
        refused = UndoResult(
            transaction_id=TransactionId(transaction_id),
            status=UndoStatus.REFUSED,
            message=f"There is no transaction {transaction_id}.",
        )
        ctx.modals.update_view(view_id, render_undo_result(refused))
    logger.info("undo of %s asked by %s with /stratus", transaction_id, user)
