"""Modal listeners: the reason of a rejection, and the explicit confirmation that an undo may
overwrite a later change (drift)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App

from bot.ids import BlockId, CallbackId, InputId
from bot.listeners.errors import acked_first
from bot.listeners.payloads import Submission
from bot.render import RejectContext, render_undo_checking

if TYPE_CHECKING:
    from bot.services import Services

logger = logging.getLogger(__name__)

REASON_MIN = 3


def register_views(app: App, services: Services) -> None:
    ops = services.incidents

    def reject_reason(ack: Ack, body: dict[str, Any]) -> None:
        submission = Submission.of(body)
        reason = submission.text(BlockId.REJECT_REASON, InputId.REJECT_REASON).strip()
        if len(reason) < REASON_MIN:
            ack(
                response_action="errors",
                errors={BlockId.REJECT_REASON.value: "Say in a few words why (it is recorded)."},
            )
            return
        ack()
        meta = RejectContext.decode(submission.private_metadata)
        ops.reject(
            plan_id=meta.plan_id,
            content_hash=meta.content_hash,
            user=submission.user,
            channel=meta.channel or None,
            reason=reason,
        )

    def undo_drift(ack: Ack, body: dict[str, Any]) -> None:
        submission = Submission.of(body)
        transaction_id, _, channel = submission.private_metadata.partition("|")
        ack(response_action="update", view=render_undo_checking(transaction_id).payload())
        ops.undo(
            transaction_id=transaction_id,
            user=submission.user,
            channel=channel or None,
            view_id=submission.view_id,
            confirm_drift=True,
        )

    # Errors after the ack are reported by the listener (see `acked_first`): raised, Bolt's
    # runner could take the ack back.
    app.view(CallbackId.REJECT_REASON.value)(acked_first(services, reject_reason))
    app.view(CallbackId.UNDO_DRIFT.value)(acked_first(services, undo_drift))
