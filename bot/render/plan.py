"""Renderers for plans: the approval message (actions, risk, the dry-run diff, approvals, and
Approve / Reject while it is open), the decision line when a person rejects it or admission
refuses it, and the modal that asks for the reason of a rejection.

Buttons carry only `plan id:content hash` (≤ 2,000 characters by construction): the plan
itself stays in storage, and the hash makes a click on an out-of-date message a refusal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agents.model import Incident, PlanStatus
from agents.planning.grounding import NOT_SEEN
from agents.planning.plan import Plan
from bot.ids import ActionId, BlockId, CallbackId, InputId
from bot.render import text as t
from bot.render.blocks import (
    INPUT_LABEL_MAX,
    SECTION_TEXT_MAX,
    Attachment,
    Block,
    Message,
    View,
    actions,
    button,
    code,
    context,
    esc,
    escape,
    fields,
    fits,
    header,
    plain,
    section,
)

DIFFS_SHOWN = 8
#: The mark an action carries when it writes a value no recorded state ever had.
NOT_SEEN_MARK = f":warning: *suggestion, {NOT_SEEN}*: confirm the value before approving"
ACTIONS_SHOWN = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanButton:
    """What an Approve or Reject button says: the plan and the hash of what was shown."""

    plan_id: str
    content_hash: str

    def value(self) -> str:
        return f"{self.plan_id}:{self.content_hash}"

    @classmethod
    def parse(cls, value: str) -> PlanButton:
        plan_id, _, content_hash = value.partition(":")
        return cls(plan_id=plan_id, content_hash=content_hash)


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectContext:
    """What the reject modal carries in `private_metadata` (ids only)."""

    plan_id: str
    content_hash: str
    channel: str

    def encode(self) -> str:
        return json.dumps(
            {"plan": self.plan_id, "hash": self.content_hash, "channel": self.channel}
        )

    @classmethod
    def decode(cls, text: str) -> RejectContext:
        data = json.loads(text or "{}")
        return cls(
            plan_id=str(data.get("plan", "")),
            content_hash=str(data.get("hash", "")),
            channel=str(data.get("channel", "")),
        )


def _status_line(plan: Plan, approvers: Sequence[str], needed: int, now: datetime | None) -> str:
    who = ", ".join(t.person(u) for u in approvers)
    if plan.status is PlanStatus.PROPOSED:
        expires = f" · expires {t.when(plan.expires_at)}" if plan.expires_at else ""
        got = f" · approved so far by {who}" if approvers else ""
        return f":raised_hand: Waiting for approval ({len(approvers)}/{needed}){got}{expires}"
    if plan.status in (PlanStatus.APPROVED, PlanStatus.EXECUTED):
        by = who or t.person(plan.decided_by or "stratus")
        return f":white_check_mark: Approved by {by} — running as a transaction"
    if plan.status is PlanStatus.REJECTED:
        by = t.person(plan.decided_by or "?")
        reason = esc(plan.reject_reason or "no reason given", 800)
        if plan.decided_by == "engine":
            return f":no_entry: Refused before any write: {reason}"
        return f":x: Rejected by {by}: {reason}"
    if plan.status is PlanStatus.EXPIRED:
        return ":hourglass: This approval request expired; Stratus proposes again."
    return f":fast_forward: {plan.status.value.capitalize()}"


def _action_lines(plan: Plan) -> list[str]:
    """One numbered line per shown action, marked where it writes a value never seen."""
    shown = plan.actions[:ACTIONS_SHOWN]
    suggested = {line.split(": the value is ", 1)[0] for line in plan.suggestions}
    action_lines = [
        f"{n}. {esc(a.describe(), 400)} ({a.risk.value})"
        + (f" — {NOT_SEEN_MARK}" if a.describe() in suggested else "")
        for n, a in enumerate(shown, start=1)
    ]
    if len(plan.actions) > ACTIONS_SHOWN:
        action_lines.append(f"… and {len(plan.actions) - ACTIONS_SHOWN} more")
    return action_lines


def _held(plan: Plan) -> list[Block]:
    if not (plan.held or plan.suggestions):
        return []
    reasons = "\n".join(f"• {esc(r, 400)}" for r in plan.held[:5])
    return [
        section(
            "*:warning: Waits for a person at every autonomy level*\n"
            + (reasons or f"• it writes a value {NOT_SEEN}")
        )
    ]


def _why(plan: Plan, needed: int) -> list[Block]:
    return [
        section("*Why*\n" + esc(plan.rationale or "—", 2500)),
        fields(
            [
                ("Risk", t.risk(plan.risk)),
                ("Approvals needed", str(needed)),
                ("Hypothesis", esc(plan.hypothesis or "—", 500)),
                ("Expires", t.when(plan.expires_at)),
            ]
        ),
    ]


def _diffs(plan: Plan) -> tuple[list[Block], tuple[Attachment, ...]]:
    """The dry-run diffs: one section each when they all fit, else one shortened section
    and the full diff as a file."""
    diffs = [(a, d) for a, d in zip(plan.actions, plan.diffs, strict=False) if d.strip()]
    if not diffs:
        return [], ()
    if len(diffs) <= DIFFS_SHOWN and all(fits(d, SECTION_TEXT_MAX - 450) for _, d in diffs):
        return [
            section(
                f"*Dry-run diff* — {esc(action.describe(), 400)}\n"
                + code(diff, SECTION_TEXT_MAX - 450)
            )
            for action, diff in diffs
        ], ()
    full = "\n\n".join(f"# {a.describe()}\n{d.rstrip()}" for a, d in diffs)
    block = section(
        "*Dry-run diff* (too long for a message: the full diff is attached)\n" + code(full, 1500)
    )
    return [block], (
        Attachment(filename=f"{plan.id}-diff.txt", title="Dry-run diff", content=full),
    )


def _approval_buttons(plan: Plan, open_for_approval: bool) -> list[Block]:
    if not (open_for_approval and plan.status is PlanStatus.PROPOSED):
        return []
    value = PlanButton(plan_id=plan.id, content_hash=plan.content_hash).value()
    return [
        actions(
            button("Approve", action_id=ActionId.APPROVE, value=value, style="primary"),
            button("Reject", action_id=ActionId.REJECT, value=value, style="danger"),
            block_id=f"plan-{plan.id}",
        )
    ]


def render_plan(
    incident: Incident,
    plan: Plan,
    *,
    approvers: Sequence[str] = (),
    needed: int = 1,
    open_for_approval: bool,
    now: datetime | None = None,
) -> Message:
    """`open_for_approval`: show Approve / Reject (the plan is proposed and the incident
    waits for it)."""
    diff_blocks, files = _diffs(plan)
    blocks: list[Block] = [
        header(f"Plan for {incident.id} (attempt {plan.attempt})"),
        section("*Actions*\n" + "\n".join(_action_lines(plan))),
        *_held(plan),
        *_why(plan, needed),
        *diff_blocks,
    ]
    if plan.reflection:
        blocks.append(context(esc(plan.reflection, 1900)))
    blocks.append(context(_status_line(plan, approvers, needed, now)))
    blocks += _approval_buttons(plan, open_for_approval)
    return Message(
        text=f"{incident.id}: plan ({plan.risk.value} risk) — {plan.describe()}",
        blocks=tuple(blocks),
        files=files,
    )


def render_decision(incident: Incident, plan: Plan) -> Message:
    """The channel line for a rejected (or refused) plan."""
    line = _status_line(plan, (), 1, None)
    return Message(
        text=f"{incident.id}: {plan.status.value} — {plan.reject_reason or ''}",
        blocks=(section(f"{line}\nStratus will propose something else or escalate."),),
    )


def render_reject_modal(plan: Plan, *, channel: str) -> View:
    meta = RejectContext(plan_id=plan.id, content_hash=plan.content_hash, channel=channel)
    return View(
        callback_id=CallbackId.REJECT_REASON,
        title="Reject plan",
        submit="Reject",
        close="Cancel",
        private_metadata=meta.encode(),
        blocks=(
            section(f"Reject *{escape(plan.id)}*: {esc(plan.describe(), 2500)}"),
            {
                "type": "input",
                "block_id": BlockId.REJECT_REASON,
                "label": plain(
                    "Why? Stratus learns from it and proposes something else.", INPUT_LABEL_MAX
                ),
                "element": {
                    "type": "plain_text_input",
                    "action_id": InputId.REJECT_REASON,
                    "multiline": True,
                    "max_length": 2000,
                },
            },
        ),
    )
