"""Block Kit renderers: pure functions from domain values to messages and modals.

Each `render_*` returns a `Message` (notification text, blocks, files for what did not fit) or
a `View` (a modal). They never call Slack, read storage or the clock: the notifier loads the
values and posts. Every one of them stays within Slack's limits whatever it is given (the
property tests feed them huge inputs and check with the local workspace's own validation).
"""

from bot.render.blocks import Attachment, Block, Message, View
from bot.render.diagnosis import (
    details_value,
    parse_details_value,
    render_diagnosis,
    render_diagnosis_details,
)
from bot.render.incident import (
    render_alerts_updated,
    render_announce,
    render_closed,
    render_escalation,
    render_opened,
    render_summary,
)
from bot.render.plan import (
    PlanButton,
    RejectContext,
    render_decision,
    render_plan,
    render_reject_modal,
)
from bot.render.transaction import (
    render_outcome,
    render_transaction,
    render_undo_checking,
    render_undo_done,
    render_undo_drift,
    render_undo_result,
    render_waiting,
)

__all__ = [
    "Attachment",
    "Block",
    "Message",
    "PlanButton",
    "RejectContext",
    "View",
    "details_value",
    "parse_details_value",
    "render_alerts_updated",
    "render_announce",
    "render_closed",
    "render_decision",
    "render_diagnosis",
    "render_diagnosis_details",
    "render_escalation",
    "render_opened",
    "render_outcome",
    "render_plan",
    "render_reject_modal",
    "render_summary",
    "render_transaction",
    "render_undo_checking",
    "render_undo_done",
    "render_undo_drift",
    "render_undo_result",
    "render_waiting",
]
