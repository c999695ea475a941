"""Renderers of `/stratus` replies: pure functions from domain values to a `Message`.

They build on `bot.render` (the same clipping blocks and wording as the incident messages), so
an incident reads the same in its channel, in a command's reply, in the App Home and in the
digest (`incident_line`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.model import Diagnosis, Incident, TimelineEvent
from agents.planning.plan import Plan
from agents.policy import NamespacePolicy
from agents.tnr.records import TransactionRecord
from bot.commands.format import bullet_lines, duration
from bot.commands.parse import USAGE, Usage, Verb
from bot.commands.reads import IncidentCard, NamespaceHealth
from bot.render import text as t
from bot.render.blocks import (
    Block,
    Message,
    context,
    divider,
    esc,
    escape,
    fields,
    header,
    section,
)

#: Timeline events shown in `/stratus incident`; older ones are summarised in one line.
TIMELINE_SHOWN = 20
INCIDENTS_SHOWN = 20


def state(incident: Incident) -> str:
    return f"{t.state_icon(incident.state)} {t.state_label(incident.state)}"


def incident_line(incident: Incident, diagnosis: Diagnosis | None = None) -> str:
    """`*INC-…* title · `namespace` · :raised_hand: Awaiting approval · μ 4 (μ0 6)`, and the
    root cause on a second line when there is a diagnosis."""
    line = " · ".join(
        [
            f"*{escape(incident.id)}* {esc(incident.title, 300)}",
            f"`{escape(incident.scope.namespace)}`",
            state(incident),
            f"μ {t.mu(incident.mu)} (μ0 {t.mu(incident.mu0)})",
        ]
    )
    if diagnosis is not None:
        top = diagnosis.top
        line += (
            f"\nroot cause `{escape(top.service)}` — {top.category}, "
            f"{t.percent(top.confidence)} confident"
        )
    return line


def render_help() -> Message:
    return Message(
        text="Stratus commands",
        blocks=(
            section("*Stratus* — Kubernetes incident response with transactions you can undo."),
            section("\n".join(USAGE[v] for v in Verb)),
            context("Replies are visible only to you unless they are a report for the channel."),
        ),
    )


def render_usage(usage: Usage) -> Message:
    lines = [f":warning: {usage.problem}"]
    if usage.verb is not None:
        lines.append(f"Usage: {USAGE[usage.verb]}")
    else:
        lines.append("Commands:\n" + "\n".join(USAGE[v] for v in Verb))
    return Message(text=usage.problem, blocks=(section("\n".join(lines)),))


def render_error(message: str) -> Message:
    return Message(text=message, blocks=(section(f":warning: {esc(message, 2900)}"),))


def render_working(what: str) -> Message:
    return Message(
        text=f"{what}…",
        blocks=(context(f":hourglass_flowing_sand: {esc(what, 1500)}… the answer follows here."),),
    )


def render_done(what: str) -> Message:
    return Message(text=what, blocks=(context(f":white_check_mark: {esc(what, 1500)}."),))


def _health_text(health: NamespaceHealth) -> str:
    severity = health.severity
    if not severity.complete:
        verdict = ":grey_question: unknown"
    elif severity.healthy:
        verdict = ":large_green_circle: healthy"
    else:
        verdict = ":red_circle: degraded"
    partial = (
        f" (at least: cannot read {esc(severity.unknown_text(), 200)})"
        if not severity.complete
        else ""
    )
    lines = [
        f"*{escape(health.namespace)}* — {verdict}, μ {t.mu(severity.mu)}{partial} · "
        f"autonomy `{health.autonomy}`",
        f"Open incidents: {len(health.open_incidents)} · pending approvals: {len(health.pending)}",
    ]
    lines.extend(
        f"• *{escape(i.id)}* {state(i)} — {esc(i.title, 200)}" for i in health.open_incidents[:5]
    )
    if severity.findings:
        lines.append(bullet_lines((escape(f) for f in severity.findings[:5]), limit=800))
    return "\n".join(lines)


def render_status(healths: Sequence[NamespaceHealth]) -> Message:
    if not healths:
        return Message(
            text="No namespaces covered",
            blocks=(
                section("Stratus covers no namespace yet (`STRATUS_NAMESPACES` or a policy)."),
            ),
        )
    degraded = sum(1 for h in healths if not h.severity.healthy)
    blocks: list[Block] = [header("Health by namespace")]
    blocks.extend(section(_health_text(h)) for h in healths)
    return Message(text=f"{degraded} of {len(healths)} namespace(s) degraded", blocks=tuple(blocks))


def render_incidents(
    cards: Sequence[IncidentCard], closed: Sequence[Incident], *, cluster: str | None = None
) -> Message:
    blocks: list[Block] = [header(f"Open incidents ({len(cards)})")]
    if cluster is not None:
        blocks.append(context(f"Cluster `{escape(cluster)}`"))
    if cards:
        blocks.extend(
            section(incident_line(c.incident, c.diagnosis)) for c in cards[:INCIDENTS_SHOWN]
        )
        if len(cards) > INCIDENTS_SHOWN:
            blocks.append(context(f"…and {len(cards) - INCIDENTS_SHOWN} more open incidents."))
    else:
        blocks.append(section("None. :large_green_circle:"))
    if closed:
        blocks.append(divider())
        lines = (
            f"*{escape(i.id)}* {esc(i.title, 200)} — closed {t.when(i.closed_at)}" for i in closed
        )
        blocks.append(section("*Recently closed*\n" + bullet_lines(lines)))
    return Message(text=f"{len(cards)} open incident(s)", blocks=tuple(blocks))


def render_elsewhere(
    cluster: str, namespace: str, serving: str, cards: Sequence[IncidentCard]
) -> Message:
    """`status other/namespace`: another cluster's bot measures μ there, so this one shows
    only what the shared database knows, and says who can tell more."""
    where = f"{escape(cluster)}/{escape(namespace)}"
    blocks: list[Block] = [header(f"{cluster}/{namespace}: open incidents ({len(cards)})")]
    if cards:
        blocks.extend(
            section(incident_line(c.incident, c.diagnosis)) for c in cards[:INCIDENTS_SHOWN]
        )
    else:
        blocks.append(section("None recorded."))
    blocks.append(
        context(
            f"This bot serves cluster `{escape(serving)}`: μ now in `{where}` is measured by "
            f"the Stratus deployment in `{escape(cluster)}`. Incidents come from the shared "
            "database."
        )
    )
    return Message(text=f"{len(cards)} open incident(s) in {where}", blocks=tuple(blocks))


def render_incident(
    incident: Incident,
    *,
    diagnosis: Diagnosis | None,
    plan: Plan | None,
    transactions: Sequence[TransactionRecord],
    events: Sequence[TimelineEvent],
) -> Message:
    blocks: list[Block] = [
        header(f"{incident.id}: {incident.title}"),
        section(incident_line(incident, diagnosis)),
        fields(
            [
                ("Opened", t.when(incident.opened_at)),
                ("Attempt", str(incident.attempt)),
                ("Scope", f"`{escape(incident.scope.key)}`"),
                ("Source", escape(incident.source)),
            ]
        ),
    ]
    if diagnosis is not None:
        blocks.append(
            section(f"*Diagnosis* ({escape(diagnosis.reasoner)})\n{esc(diagnosis.summary, 2500)}")
        )
    if plan is not None:
        actions = bullet_lines((escape(a.describe()) for a in plan.actions), limit=2500)
        blocks.append(
            section(f"*Plan* `{escape(plan.id)}` — {plan.status}, {t.risk(plan.risk)}\n{actions}")
        )
    if transactions:
        lines = (
            f"`{escape(x.id)}` {x.status} — μ {t.mu(x.mu_before)} → {t.mu(x.mu_after)}"
            + (f" ({t.people(esc(x.reason, 200))})" if x.reason else "")
            for x in transactions
        )
        blocks.append(section("*Transactions*\n" + bullet_lines(lines, limit=2800)))
    shown = list(events[-TIMELINE_SHOWN:])
    lines_ = [
        f"{t.clock_time(e.at)} {t.state_icon(e.state)} {t.people(esc(e.message, 250))}"
        for e in shown
    ]
    if len(events) > len(shown):
        lines_.insert(0, f"…{len(events) - len(shown)} earlier event(s)")
    blocks.append(section("*Timeline* (UTC)\n" + ("\n".join(lines_) or "—")))
    return Message(text=f"{incident.id}: {incident.title}", blocks=tuple(blocks))


def _who(approver: str) -> str:
    # A user id is a mention (Slack shows the name); a group handle stays code, so listing the
    # policy does not notify the whole group.
    return t.person(approver) if approver[:1] in ("U", "W") else f"`{escape(approver)}`"


def _policy_text(policy: NamespacePolicy) -> str:
    approvers = (
        "; ".join(
            f"{risk}: {', '.join(_who(a) for a in policy.approvers_for(risk)) or 'anyone'}"
            for risk in sorted(policy.approvers, key=lambda r: r.rank)
        )
        or "anyone in the channel"
    )
    limits = policy.limits
    name = "defaults" if policy.namespace == "*" else policy.namespace
    return "\n".join(
        [
            f"*{escape(name)}* — autonomy `{policy.autonomy}`",
            f"Approvers: {approvers}",
            f"Two approvers from `{policy.two_person_rule}` risk · approvals expire after "
            f"{duration(policy.approval_ttl_s)} · {policy.attempts} attempt(s)",
            f"K = {limits.max_actions} actions · Δ = {duration(limits.deadline_s)} · sustain "
            f"{duration(limits.sustain_s)}",
            f"SLO: error ratio ≤ {t.percent(policy.slo.error_ratio)}, p99 ≤ "
            f"{policy.slo.latency_p99_ms:g} ms",
        ]
    )


def render_policy(policies: Sequence[NamespacePolicy], *, source: str) -> Message:
    blocks: list[Block] = [header("Policy in force")]
    blocks.extend(section(_policy_text(p)) for p in policies)
    blocks.append(context(f"From {esc(source, 500)}."))
    return Message(text="Policy in force", blocks=tuple(blocks))


def render_declared(incident: Incident, *, joined: bool, user: str) -> Message:
    ns = f"`{escape(incident.scope.namespace)}`"
    if joined:
        text = (
            f":information_source: {t.person(user)} declared a problem in {ns}; it joins the "
            f"open incident *{escape(incident.id)}* ({esc(incident.title, 300)})."
        )
    else:
        text = (
            f":rotating_light: {t.person(user)} declared incident *{escape(incident.id)}* in "
            f"{ns}: {esc(incident.title, 300)}. Stratus is diagnosing it."
        )
    return Message(text=f"Declared: {incident.title}", blocks=(section(text),))


def render_adhoc_diagnosis(
    diagnosis: Diagnosis, *, namespace: str, service: str | None, user: str
) -> Message:
    """An on-demand diagnosis: like the incident's, without an incident behind it."""
    target = f"{namespace}/{service}" if service else namespace
    top = diagnosis.top
    blocks: list[Block] = [
        header(f"Diagnosis of {target}"),
        section(
            f":mag: *Root cause:* `{escape(top.service)}` — {top.category} "
            f"(confidence {t.percent(top.confidence)})\n{esc(top.explanation, 1500)}"
        ),
    ]
    cited = [diagnosis.evidence[i] for i in top.evidence if 0 <= i < len(diagnosis.evidence)]
    evidence = cited or list(diagnosis.evidence[:5])
    if evidence:
        lines = (f"_{e.kind.value}_ {esc(e.summary, 300)}" for e in evidence[:8])
        blocks.append(section("*Evidence*\n" + bullet_lines(lines)))
    if len(diagnosis.hypotheses) > 1:
        lines = (
            f"`{escape(h.service)}` — {h.category}, {t.percent(h.confidence)}"
            for h in diagnosis.hypotheses[1:4]
        )
        blocks.append(section("*Alternatives*\n" + bullet_lines(lines)))
    if diagnosis.similar:
        lines = (
            f"*{escape(s.incident_id)}* {esc(s.title, 200)} — "
            f"{esc(s.resolution or 'no resolution recorded', 300)}"
            for s in diagnosis.similar[:3]
        )
        blocks.append(section("*Similar past incidents*\n" + bullet_lines(lines)))
    note = (
        f"Asked by {t.person(user)} · reasoner {escape(diagnosis.reasoner)} · read-only: "
        "nothing was changed and no incident was opened"
    )
    if diagnosis.fallback_reason:
        note += f" · fell back: {esc(diagnosis.fallback_reason, 300)}"
    blocks.append(context(note))
    return Message(text=f"Diagnosis of {target}: root cause {top.service}", blocks=tuple(blocks))
