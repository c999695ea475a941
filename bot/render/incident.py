"""Renderers for the incident as a whole: the opening message, the pinned summary, the
announcement in the incidents channel, alert updates, escalation and the closing summary."""

from __future__ import annotations

from collections.abc import Sequence

from agents.detection.events import AlertsUpdated
from agents.model import Alert, Diagnosis, Incident, IncidentState, TimelineEvent
from agents.planning.plan import Plan
from bot.render import text as t
from bot.render.blocks import (
    SECTION_TEXT_MAX,
    Attachment,
    Block,
    Message,
    code,
    context,
    divider,
    esc,
    escape,
    fields,
    fits,
    header,
    section,
)

TIMELINE_SHOWN = 10
ALERTS_SHOWN = 8


def _scope(incident: Incident) -> str:
    return f"`{escape(incident.scope.namespace)}` on `{escape(incident.scope.cluster)}`"


def render_opened(
    incident: Incident, alerts: Sequence[Alert], findings: Sequence[str] = ()
) -> Message:
    lines = []
    for alert in list(alerts)[:ALERTS_SHOWN]:
        summary = alert.annotations.get("summary") or alert.annotations.get("description") or ""
        where = f" on `{escape(alert.service)}`" if alert.service else ""
        lines.append(
            f"• *{escape(alert.name)}* ({escape(alert.severity)}){where}"
            + (f" — {esc(summary, 300)}" if summary else "")
        )
    if len(alerts) > ALERTS_SHOWN:
        lines.append(f"… and {len(alerts) - ALERTS_SHOWN} more")
    blocks: list[Block] = [
        header(f"Incident {incident.id}"),
        section(f":rotating_light: *{escape(incident.title)}*\nScope {_scope(incident)}"),
        fields(
            [
                ("Severity μ0", t.mu(incident.mu0)),
                ("Source", escape(incident.source)),
                ("Opened", t.when(incident.opened_at)),
                ("Alerts", str(len(alerts))),
            ]
        ),
    ]
    if lines:
        blocks.append(section("*Alerts*\n" + "\n".join(lines)))
    # μ0's findings name the firing alerts too ("alert GeoDown firing (geo)"): the list above
    # already shows those, so only the other findings are added.
    listed = tuple(f"alert {a.name} " for a in alerts)
    other = [f for f in findings if not f.startswith(listed)] if lines else list(findings)
    if other:
        blocks.append(context(*(esc(f, 400) for f in other[:5])))
    blocks.append(context("Stratus is collecting evidence; the diagnosis follows here."))
    return Message(text=f"Incident {incident.id} opened: {incident.title}", blocks=tuple(blocks))


def render_announce(incident: Incident, channel_id: str) -> Message:
    """The line in the incidents channel that points at a new incident's own channel."""
    return Message(
        text=f"Incident {incident.id} opened: {incident.title}",
        blocks=(
            section(
                f":rotating_light: *{incident.id}* — {escape(incident.title)}\n"
                f"Scope {_scope(incident)} · μ0 {t.mu(incident.mu0)} · follow in <#{channel_id}>"
            ),
        ),
    )


def render_summary(
    incident: Incident,
    *,
    diagnosis: Diagnosis | None,
    plan: Plan | None,
    timeline: Sequence[TimelineEvent],
) -> Message:
    """The pinned summary, kept current: status, μ, root cause, plan, recent timeline."""
    status = f"{t.state_icon(incident.state)} *{t.state_label(incident.state)}*"
    root = "not diagnosed yet"
    if diagnosis is not None:
        root = (
            f"`{escape(diagnosis.root_cause_service)}` ({diagnosis.category}, "
            f"{t.percent(diagnosis.confidence)})"
        )
    plan_text = "none yet"
    if plan is not None:
        plan_text = f"{esc(plan.describe(), 1500)} ({plan.status.value})"
    recent = list(timeline)[-TIMELINE_SHOWN:]
    lines = [
        f"`{t.clock_time(e.at)}` {t.state_label(e.state)} — {t.people(esc(e.message, 240))}"
        for e in recent
    ]
    if len(timeline) > TIMELINE_SHOWN:
        lines.insert(0, f"… {len(timeline) - TIMELINE_SHOWN} earlier events")
    blocks: list[Block] = [
        header(f"{incident.id}: {incident.title}"),
        section(f"{status} · scope {_scope(incident)} · attempt {incident.attempt + 1}"),
        fields(
            [
                ("Severity μ", t.mu(incident.mu)),
                ("Baseline μ0", t.mu(incident.mu0)),
                ("Root cause", root),
                ("Plan", plan_text),
                ("Opened", t.when(incident.opened_at)),
                ("Updated", t.when(incident.updated_at)),
            ]
        ),
        divider(),
        section("*Timeline*\n" + ("\n".join(lines) or "—")),
    ]
    if incident.state is IncidentState.CLOSED:
        blocks.append(context(f"Closed {t.when(incident.closed_at)}."))
    return Message(
        text=f"{incident.id}: {t.state_label(incident.state)} — {incident.title}",
        blocks=tuple(blocks),
    )


def render_alerts_updated(event: AlertsUpdated) -> Message:
    # `event.text` already names the new alerts: say it once.
    return Message(
        text=f"{event.incident_id}: {event.text}",
        blocks=(context(f":bell: {escape(event.text)}"),),
    )


def render_escalation(incident: Incident, *, reason: str, runbook: str) -> Message:
    """A person must act: why, and the runbook (long runbooks go as a file)."""
    blocks: list[Block] = [
        section(
            f":sos: *Escalated — a person must act.*\n{esc(reason, 1500)}\n"
            f"Stratus changes nothing further in {_scope(incident)} for this incident."
        )
    ]
    files: tuple[Attachment, ...] = ()
    if runbook.strip():
        if fits(runbook):
            blocks.append(section("*Runbook*\n" + code(runbook, SECTION_TEXT_MAX - 20)))
        else:
            blocks.append(section("*Runbook* (the full text is attached)\n" + code(runbook, 2000)))
            files = (
                Attachment(filename=f"{incident.id}-runbook.md", title="Runbook", content=runbook),
            )
    return Message(text=f"{incident.id} escalated: {reason}", blocks=tuple(blocks), files=files)


def render_closed(incident: Incident, summary: str) -> Message:
    ended = "resolved" if "resolved" in summary.split(".", 1)[0] else "closed"
    return Message(
        text=f"{incident.id} closed",
        blocks=(
            section(f":checkered_flag: *Incident {incident.id} {ended}.*\n{escape(summary)}"),
            context(f"Closed {t.when(incident.closed_at)} · kept for similar-incident search."),
        ),
    )
