"""Button listeners: Approve, Reject, Undo and Details. Each acknowledges first, then either
opens a modal (which must happen within the click's trigger lifetime) or hands the work to
the incident operations, which run it in a lane."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App

from agents.model import PlanStatus
from bot.errors import SlackCallFailed
from bot.ids import ActionId
from bot.listeners.errors import acked_first
from bot.listeners.payloads import Click
from bot.render import (
    PlanButton,
    parse_details_value,
    render_diagnosis_details,
    render_reject_modal,
    render_undo_checking,
)

if TYPE_CHECKING:
    from bot.services import Services

logger = logging.getLogger(__name__)


def register_actions(app: App, services: Services) -> None:
    ops = services.incidents
    slack = services.slack

    def approve(ack: Ack, body: dict[str, Any]) -> None:
        ack()
        click = Click.of(body)
        button = PlanButton.parse(click.value)
        ops.approve(
            plan_id=button.plan_id,
            content_hash=button.content_hash,
            user=click.user,
            channel=click.channel,
        )

    def reject(ack: Ack, body: dict[str, Any]) -> None:
        ack()
        click = Click.of(body)
        button = PlanButton.parse(click.value)
        plan = ops.brain.machine.plan(button.plan_id)
        if plan.status is not PlanStatus.PROPOSED or plan.content_hash != button.content_hash:
            slack.tell(
                click.user, f"This plan is {plan.status}; nothing to reject.", channel=click.channel
            )
            return
        if click.trigger_id:
            slack.open_view(
                click.trigger_id, render_reject_modal(plan, channel=click.channel or "")
            )

    def undo(ack: Ack, body: dict[str, Any]) -> None:
        ack()
        click = Click.of(body)
        view_id = None
        if click.trigger_id:
            try:
                view_id = slack.open_view(click.trigger_id, render_undo_checking(click.value))
            except SlackCallFailed as e:
                # The modal only shows the undo; the undo is what was asked for. Without the
                # modal its result still reaches the channel (and a refusal the person).
                logger.warning("undo %s: the modal did not open: %s", click.value, e.error)
        ops.undo(
            transaction_id=click.value, user=click.user, channel=click.channel, view_id=view_id
        )

    def details(ack: Ack, body: dict[str, Any]) -> None:
        ack()
        click = Click.of(body)
        diagnosis_id = parse_details_value(click.value)
        if diagnosis_id is None or not click.trigger_id:
            return
        incident, diagnosis = ops.brain.machine.stored_diagnosis(diagnosis_id)
        slack.open_view(click.trigger_id, render_diagnosis_details(incident, diagnosis))

    for action, listener in (
        (ActionId.APPROVE, approve),
        (ActionId.REJECT, reject),
        (ActionId.UNDO, undo),
        (ActionId.DETAILS, details),
    ):
        app.action(action.value)(acked_first(services, listener))
