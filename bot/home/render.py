"""The App Home tab: a pure function of `HomeContent` to a `home` view.

Approve, Reject and Undo are the very buttons of the incident messages (`bot.ids.ActionId`,
values with ids only), so a click here takes the same path, with the same authorisation, as a
click in the incident's channel. Only Refresh is the Home's own.
"""

from __future__ import annotations

from enum import StrEnum

from agents.tnr.records import TransactionRecord
from bot.commands.format import bullet_lines
from bot.commands.reads import PendingApproval
from bot.commands.render import incident_line
from bot.home.content import HomeContent
from bot.ids import ActionId
from bot.render import PlanButton
from bot.render import text as t
from bot.render.blocks import (
    VIEW_BLOCKS_MAX,
    Block,
    actions,
    button,
    context,
    divider,
    esc,
    escape,
    fit_blocks,
    header,
    section,
)
from bot.render.transaction import undo_button


class HomeAction(StrEnum):
    REFRESH = "stratus_home_refresh"


def _approval_blocks(pending: PendingApproval) -> list[Block]:
    plan, incident = pending.plan, pending.incident
    value = PlanButton(plan_id=plan.id, content_hash=plan.content_hash).value()
    got = f"{len(pending.approved_by)}/{pending.needed} approvals"
    return [
        section(
            f"*{escape(incident.id)}* {esc(incident.title, 300)} · "
            f"`{escape(incident.scope.namespace)}`\n"
            + bullet_lines((esc(a.describe(), 300) for a in plan.actions), limit=1500)
            + f"\n{t.risk(plan.risk)} · {got} · expires {t.when(plan.expires_at)}"
        ),
        actions(
            button("Approve", action_id=ActionId.APPROVE, value=value, style="primary"),
            button("Reject", action_id=ActionId.REJECT, value=value, style="danger"),
            block_id=f"home-plan-{plan.id}",
        ),
    ]


def _transaction_block(tx: TransactionRecord) -> Block:
    where = f"`{escape(tx.scope.namespace)}`"
    about = f" · {escape(tx.incident_id)}" if tx.incident_id else ""
    return section(
        f"`{escape(tx.id)}` {where}{about} — committed {t.when(tx.ended_at or tx.started_at)}\n"
        f"μ {t.mu(tx.mu_before)} → {t.mu(tx.mu_after)} · {t.people(esc(tx.reason or '', 500))}",
        accessory=undo_button(tx.id),
    )


def render_home(content: HomeContent) -> Block:
    blocks: list[Block] = [
        header("Stratus"),
        actions(
            button("Refresh", action_id=HomeAction.REFRESH, value="refresh"),
            block_id="home-refresh",
        ),
        context(
            f"As of {t.when(content.at)}"
            + (f" · {esc(content.notice, 500)}" if content.notice else "")
        ),
        divider(),
        section(f"*Waiting for your approval* ({len(content.waiting)})"),
    ]
    if content.waiting:
        for pending in content.waiting:
            blocks.extend(_approval_blocks(pending))
    else:
        blocks.append(context("Nothing waits for you. :relaxed:"))
    blocks += [
        divider(),
        section(f"*Open incidents* ({len(content.incidents) + content.more_incidents})"),
    ]
    if content.incidents:
        blocks.extend(section(incident_line(c.incident, c.diagnosis)) for c in content.incidents)
        if content.more_incidents:
            blocks.append(context(f"…and {content.more_incidents} more: `/stratus incidents`."))
    else:
        blocks.append(context("None. :large_green_circle:"))
    blocks += [divider(), section("*Recent transactions* (Undo puts back what they changed)")]
    if content.transactions:
        blocks.extend(_transaction_block(tx) for tx in content.transactions)
    else:
        blocks.append(context("No committed transaction to undo."))
    return {"type": "home", "blocks": fit_blocks(blocks, limit=VIEW_BLOCKS_MAX)}
