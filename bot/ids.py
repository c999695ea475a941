"""Every action id, callback id and message kind the bot uses, in one place.

Slack routes a click by its `action_id` and a modal submission by its `callback_id`; storage
files each posted message under a `kind`. They are enum members so that a listener and the
renderer that draws its button cannot disagree on a string.
"""

from __future__ import annotations

from enum import StrEnum


class ActionId(StrEnum):
    APPROVE = "stratus_approve"
    REJECT = "stratus_reject"
    UNDO = "stratus_undo"
    DETAILS = "stratus_details"


class CallbackId(StrEnum):
    REJECT_REASON = "stratus_reject_reason"
    UNDO_DRIFT = "stratus_undo_drift"
    UNDO_STATUS = "stratus_undo_status"
    DETAILS = "stratus_details_view"


class BlockId(StrEnum):
    REJECT_REASON = "reason"


class InputId(StrEnum):
    REJECT_REASON = "reason_text"


class MessageKind(StrEnum):
    """What a stored message shows (`slack_messages.kind`); `ref` says which one."""

    SUMMARY = "summary"  # ref: incident id; pinned, kept current
    ANNOUNCE = "announce"  # ref: incident id; in STRATUS_INCIDENT_CHANNEL (channel mode)
    OPENED = "opened"  # ref: incident id
    DIAGNOSIS = "diagnosis"  # ref: diagnosis row id
    PLAN = "plan"  # ref: plan id
    DECISION = "decision"  # ref: plan id (rejected by a person, or refused by admission)
    TRANSACTION = "transaction"  # ref: transaction id; progress, updated in place
    OUTCOME = "outcome"  # ref: transaction id; committed (Undo) / aborted / escalated
    UNDO = "undo"  # ref: transaction id; the result of an undo
    ESCALATION = "escalation"  # ref: timeline event id
    WAITING = "waiting"  # ref: timeline event id; a transaction not started (cannot measure)
    ALERTS = "alerts"  # ref: incident id + instant; alerts joined or resolved
    CLOSED = "closed"  # ref: incident id
