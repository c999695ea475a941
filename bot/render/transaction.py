"""Renderers for transactions: the progress message updated in place, the outcome (committed
with Undo, rolled back with the figures that decided it, escalated), the undo result, and the
modals of the Undo flow (checking, drift confirmation, result)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.model import Incident, TransactionStatus
from agents.planning.plan import Plan
from agents.tnr import Progress, Step, UndoResult, UndoStatus
from agents.tnr.records import TransactionRecord
from bot.ids import ActionId, CallbackId
from bot.render import text as t
from bot.render.blocks import (
    Block,
    Message,
    View,
    actions,
    button,
    confirm_dialog,
    context,
    esc,
    escape,
    fields,
    section,
)

_STEP_ICON = {
    Step.LOCKED: ":lock:",
    Step.DRY_RUN: ":test_tube:",
    Step.WRITE: ":pencil2:",
    Step.SETTLE: ":hourglass_flowing_sand:",
    Step.SUSTAIN: ":stopwatch:",
    Step.COMMITTED: ":white_check_mark:",
    Step.ABORTING: ":leftwards_arrow_with_hook:",
    Step.RESTORE: ":leftwards_arrow_with_hook:",
    Step.ABORTED: ":leftwards_arrow_with_hook:",
    Step.ESCALATED: ":sos:",
    Step.HELD: ":double_vertical_bar:",
    Step.UNDO: ":rewind:",
    Step.UNDONE: ":rewind:",
}

_STATUS_LINE = {
    TransactionStatus.OPEN: ":pencil2: Writing",
    TransactionStatus.VALIDATING: ":stopwatch: Validating",
    TransactionStatus.COMMITTED: ":white_check_mark: Committed",
    TransactionStatus.ABORTING: ":leftwards_arrow_with_hook: Rolling back",
    TransactionStatus.ABORTED: ":leftwards_arrow_with_hook: Rolled back",
    TransactionStatus.ESCALATED: ":sos: Escalated",
    TransactionStatus.UNDOING: ":rewind: Undoing",
    TransactionStatus.UNDONE: ":rewind: Undone",
    TransactionStatus.HELD: ":double_vertical_bar: Held: rollback unfinished",
}

#: Separates why a transaction aborted from why its abort is held (agents.tnr.engine).
_HELD_MARK = " — held: "


#: Past these the progress message has nothing left to show (see `render_outcome`).
_ENDED = frozenset(
    {
        TransactionStatus.COMMITTED,
        TransactionStatus.ABORTED,
        TransactionStatus.ESCALATED,
        TransactionStatus.UNDOING,
        TransactionStatus.UNDONE,
    }
)


def _bar(done: int, total: int) -> str:
    if total <= 0:
        return ""
    filled = round(10 * min(done, total) / total)
    return "▰" * filled + "▱" * (10 - filled) + f" {done}/{total}"


def render_transaction(plan: Plan, tx: TransactionRecord, progress: Progress | None) -> Message:
    """One message per transaction, updated in place as it runs."""
    status = _STATUS_LINE.get(tx.status, tx.status.value)
    if tx.status in _ENDED:
        # The outcome message below says what happened, with the figures (and Undo): this
        # one only closes the progress it showed, so nothing is said twice.
        where = (
            "the outcome and Undo are below"
            if tx.status is TransactionStatus.COMMITTED
            else ("the outcome is below")
        )
        return Message(
            text=f"Transaction {tx.id}: {status}",
            blocks=(
                section(f"*Transaction `{tx.id}`* — {status} · {where}."),
                context(f"Started {t.when(tx.started_at)} · ended {t.when(tx.ended_at)}"),
            ),
        )
    lines = [f"*Transaction `{tx.id}`* — {status}", esc(plan.describe(), 1200)]
    if progress is not None and tx.status in (
        TransactionStatus.OPEN,
        TransactionStatus.VALIDATING,
        TransactionStatus.ABORTING,
    ):
        icon = _STEP_ICON.get(progress.step, "")
        lines.append(f"{icon} {esc(progress.message, 600)}")
        bar = _bar(progress.done, progress.total)
        if bar:
            lines.append(bar)
        if progress.mu is not None:
            lines.append(f"μ now {t.mu(progress.mu)}")
    elif tx.reason:
        lines.append(t.people(esc(tx.reason, 800)))
    return Message(
        text=f"Transaction {tx.id}: {status}",
        blocks=(
            section("\n".join(lines)),
            context(
                f"μ0 {t.mu(tx.mu0)} · μ before {t.mu(tx.mu_before)} · μ after "
                f"{t.mu(tx.mu_after)} · started {t.when(tx.started_at)} · "
                f"deadline {t.when(tx.deadline_at)}"
            ),
        ),
    )


def _figures(validation: Mapping[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, label in (
        ("mu_before", "μ before"),
        ("mu_after", "μ after"),
        ("mu0", "μ0"),
        ("settle_s", "Settle (s)"),
    ):
        value = validation.get(key)
        if isinstance(value, int | float):
            out.append((label, f"{round(value, 1):g}"))
    severity = validation.get("severity")
    if isinstance(severity, Mapping):
        # μ after = new alerts + SLO violations + lost capacity, each already weighted.
        for key, label in (
            ("alerts", "New alerts"),
            ("slo", "SLO violations"),
            ("capacity", "Lost capacity"),
        ):
            value = severity.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                out.append((label, f"{round(value, 1):g}"))
    pending = validation.get("pending")
    if isinstance(pending, list) and pending:
        out.append(("Still rolling", esc(", ".join(map(str, pending)), 500)))
    return out[:10]


def undo_button(tx_id: str) -> Block:
    return button(
        "Undo",
        action_id=ActionId.UNDO,
        value=tx_id,
        confirm=confirm_dialog(
            title="Undo this transaction?",
            text="Stratus puts back every object this transaction changed, in reverse order, "
            "under the writer lock. If someone changed them since, you will be asked again.",
            confirm="Undo",
        ),
    )


def finish_button(tx_id: str) -> Block:
    """Undo of a held transaction: finish the rollback it could not finish."""
    return button(
        "Undo",
        action_id=ActionId.UNDO,
        value=tx_id,
        confirm=confirm_dialog(
            title="Finish the rollback?",
            text="Stratus restores the objects this transaction changed that are not back yet, "
            "under the writer lock, then measures the scope again.",
            confirm="Finish rollback",
        ),
    )


def render_waiting(incident: Incident, plan: Plan, reason: str) -> Message:
    """A transaction that did not start because μ_before could not be measured."""
    return Message(
        text=f"{incident.id}: waiting, {reason}",
        blocks=(
            section(
                f":double_vertical_bar: *Waiting* — {esc(reason, 800)}. Nothing was written; "
                f"Stratus tries {esc(plan.describe(), 800)} again once it can measure the scope."
            ),
        ),
    )


def render_outcome(
    incident: Incident, plan: Plan, tx: TransactionRecord, *, undone_by: str | None = None
) -> Message:
    """How the transaction ended. A committed one carries Undo until it is undone."""
    blocks: list[Block] = []
    reason = t.people(esc(tx.reason or "", 1500))
    if tx.status is TransactionStatus.UNDONE:
        # Who and what; the undo result below gives what was restored and μ now.
        by = f" by {t.person(undone_by)}" if undone_by else ""
        blocks.append(
            section(
                f":rewind: *Undone{by}* — `{tx.id}`: {esc(plan.describe(), 1200)} was reverted."
            )
        )
    elif tx.status in (TransactionStatus.COMMITTED, TransactionStatus.UNDOING):
        blocks.append(
            section(
                f":white_check_mark: *Committed `{tx.id}`* — {reason}\n"
                f"{esc(plan.describe(), 1200)}\nμ {t.mu(tx.mu_before)} → {t.mu(tx.mu_after)} "
                f"(baseline μ0 {t.mu(tx.mu0)})"
            )
        )
    elif tx.status is TransactionStatus.ABORTED:
        blocks.append(
            section(
                f":leftwards_arrow_with_hook: *Rolled back `{tx.id}`* — {reason}\n"
                f"Every change was put back; μ {t.mu(tx.mu_before)} before, "
                f"{t.mu(tx.mu_after)} when validation decided."
            )
        )
    elif tx.status is TransactionStatus.HELD:
        why = (tx.reason or "").split(_HELD_MARK, 1)[-1]
        first = (tx.reason or "").split(_HELD_MARK, 1)[0]
        blocks.append(
            section(
                f":double_vertical_bar: *Held `{tx.id}`: {esc(why, 1200)}*\n"
                f"Rolling back because {esc(first, 600)}. μ after the rollback is unknown, "
                "not healthy; the incident stays open and Stratus keeps trying."
            )
        )
    else:
        blocks.append(
            section(
                f":sos: *`{tx.id}` escalated* — {reason}\nThe rollback did not bring μ back to "
                f"{t.mu(tx.mu_before)}. A person must look; the audit trail lists every "
                "snapshot and restore."
            )
        )
    figures = _figures(tx.validation) if tx.status is not TransactionStatus.UNDONE else []
    if figures:
        blocks.append(fields(figures))
    if tx.status is TransactionStatus.COMMITTED:
        blocks.append(actions(undo_button(tx.id), block_id=f"undo-{tx.id}"))
    elif tx.status is TransactionStatus.HELD:
        blocks.append(actions(finish_button(tx.id), block_id=f"undo-{tx.id}"))
    elif tx.status is TransactionStatus.UNDOING:
        blocks.append(context(":rewind: Undo in progress…"))
    return Message(
        text=f"{incident.id}: transaction {tx.id} {tx.status.value}", blocks=tuple(blocks)
    )


def render_undo_done(
    tx: TransactionRecord, *, actor: str, restored: int, overwritten: int = 0
) -> Message:
    extra = (
        f" (overwrote {t.plural(overwritten, 'later change')}, as confirmed by {t.person(actor)})"
        if overwritten
        else ""
    )
    return Message(
        text=f"Transaction {tx.id} undone",
        blocks=(
            section(
                f":rewind: *Undo of `{tx.id}` finished*: restored "
                f"{t.plural(restored, 'object')}{extra}. μ now {t.mu(tx.mu_after)} "
                f"(baseline μ0 {t.mu(tx.mu0)})."
            ),
        ),
    )


def render_undo_checking(tx_id: str) -> View:
    return View(
        callback_id=CallbackId.UNDO_STATUS,
        title="Undo",
        blocks=(section(f":hourglass_flowing_sand: Undoing `{escape(tx_id)}`…"),),
        private_metadata=tx_id,
    )


def render_undo_drift(result: UndoResult, *, channel: str) -> View:
    """Objects changed since our write: show what, and ask before overwriting."""
    lines = [f"• {esc(d.summary(), 600)}" for d in result.drift[:20]]
    if len(result.drift) > 20:
        lines.append(f"… and {len(result.drift) - 20} more")
    return View(
        callback_id=CallbackId.UNDO_DRIFT,
        title="Objects changed",
        submit="Overwrite & undo",
        close="Keep them",
        private_metadata=f"{result.transaction_id}|{channel}",
        blocks=(
            section(
                f":warning: Since `{escape(result.transaction_id)}` was committed, someone "
                "changed the objects it wrote. Undoing now overwrites their change:"
            ),
            section("\n".join(lines) or "—"),
            context("Submit to overwrite and undo anyway; close to keep their change."),
        ),
    )


def render_undo_result(result: UndoResult) -> View:
    icon = {
        UndoStatus.UNDONE: ":rewind:",
        UndoStatus.BLOCKED: ":no_entry:",
        UndoStatus.REFUSED: ":no_entry:",
        UndoStatus.FAILED: ":x:",
        UndoStatus.DRIFT: ":warning:",
    }[result.status]
    body = f"{icon} *{result.status.value.capitalize()}*: {esc(result.message, 2500)}"
    if result.status is UndoStatus.BLOCKED and result.blocked_by:
        body += "\nUndo first: " + ", ".join(f"`{escape(b)}`" for b in result.blocked_by[:20])
    return View(
        callback_id=CallbackId.UNDO_STATUS,
        title="Undo",
        blocks=(section(body), context(f"Transaction `{escape(result.transaction_id)}`")),
        private_metadata=result.transaction_id,
    )
