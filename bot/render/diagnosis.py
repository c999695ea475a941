"""Renderers for a diagnosis: the channel message (root cause, category, confidence, the
strongest evidence, similar past incidents) and the Details modal with every piece of evidence.
Evidence that does not fit goes into a file next to the message."""

from __future__ import annotations

from agents.model import Diagnosis, Evidence, Incident
from bot.ids import ActionId, CallbackId
from bot.render import text as t
from bot.render.blocks import (
    SECTION_TEXT_MAX,
    VIEW_BLOCKS_MAX,
    Attachment,
    Block,
    Message,
    View,
    actions,
    button,
    code,
    context,
    divider,
    esc,
    escape,
    fields,
    header,
    section,
)

EVIDENCE_SHOWN = 5
SIMILAR_SHOWN = 3
ALTERNATIVES_SHOWN = 3


def details_value(diagnosis_ref: str) -> str:
    """The Details button's value: the stored diagnosis's id (it names its incident)."""
    return diagnosis_ref


def parse_details_value(value: str) -> int | None:
    return int(value) if value.isdigit() else None


def _evidence_line(item: Evidence) -> str:
    where = f" `{escape(item.service)}`" if item.service else ""
    summary = item.summary
    if item.service and summary.startswith(f"{item.service}: "):
        summary = summary[len(item.service) + 2 :]  # the service is named once, in code
    return f"• _{item.kind.value}_{where}: {t.people(esc(summary, 300))}"


def evidence_text(diagnosis: Diagnosis) -> str:
    """Every piece of evidence in full, for the attached file."""
    parts = [f"Diagnosis of {diagnosis.incident_id} ({diagnosis.reasoner})", diagnosis.summary, ""]
    for number, item in enumerate(diagnosis.evidence, start=1):
        parts.append(f"[{number}] {item.kind.value} {item.source}")
        parts.append(f"    {item.summary}")
        if item.detail:
            parts.extend(f"    {line}" for line in item.detail.splitlines())
        parts.append("")
    return "\n".join(parts)


def _reason(reason: str | None) -> str:
    """` (CreateContainerConfigError)` after a category: the word to search runbooks for."""
    return f" (`{escape(reason)}`)" if reason else ""


def _too_long_for_messages(diagnosis: Diagnosis) -> bool:
    total = sum(len(e.summary) + len(e.detail) for e in diagnosis.evidence)
    return total > SECTION_TEXT_MAX or len(diagnosis.evidence) > EVIDENCE_SHOWN


def _root_cause(diagnosis: Diagnosis) -> list[Block]:
    """The heading, the root cause with its explanation, and the figures under it."""
    top = diagnosis.top
    blocks: list[Block] = [
        header(f"Diagnosis: {top.service}"),
        section(
            f":mag: *Root cause:* `{escape(top.service)}` — {top.category}{_reason(top.reason)} "
            f"(confidence {t.percent(top.confidence)})\n{esc(top.explanation, 1200)}"
        ),
        fields(
            [
                ("Category", str(top.category)),
                ("Kubernetes reason", escape(top.reason) if top.reason else "none shown"),
                ("Confidence", t.percent(top.confidence)),
                ("Reasoner", escape(diagnosis.reasoner)),
                ("Evidence", t.plural(len(diagnosis.evidence), "item")),
            ]
        ),
    ]
    if diagnosis.summary and top.explanation not in diagnosis.summary:
        # The offline summary is "service: category (confidence) — explanation": all shown.
        blocks.append(section(escape(diagnosis.summary)))
    return blocks


def _strongest_evidence(diagnosis: Diagnosis) -> list[Block]:
    top = diagnosis.top
    cited = [diagnosis.evidence[i] for i in top.evidence if 0 <= i < len(diagnosis.evidence)]
    strongest = (cited or list(diagnosis.evidence))[:EVIDENCE_SHOWN]
    if not strongest:
        return []
    return [section("*Evidence*\n" + "\n".join(_evidence_line(e) for e in strongest))]


def _alternatives(diagnosis: Diagnosis) -> list[Block]:
    others = diagnosis.hypotheses[1 : 1 + ALTERNATIVES_SHOWN]
    if not others:
        return []
    return [
        context(
            "Also considered: "
            + "; ".join(
                f"`{escape(h.service)}` {h.category} ({t.percent(h.confidence)})" for h in others
            )
        )
    ]


def _similar(diagnosis: Diagnosis) -> list[Block]:
    if not diagnosis.similar:
        return []
    lines = [
        f"• *{escape(s.incident_id)}* {esc(s.title, 200)} — "
        f"{escape(s.root_cause_service or '?')} ({escape(s.category or '?')}); "
        f"fixed by {esc(s.resolution or 'unknown', 300)} "
        f"(similarity {t.percent(s.score)})"
        for s in diagnosis.similar[:SIMILAR_SHOWN]
    ]
    return [section("*Similar past incidents*\n" + "\n".join(lines))]


def _fallback(diagnosis: Diagnosis) -> list[Block]:
    if not diagnosis.fallback_reason:
        return []
    return [context(f"The offline reasoner took over: {esc(diagnosis.fallback_reason, 500)}")]


def _evidence_file(incident: Incident, diagnosis: Diagnosis) -> tuple[Attachment, ...]:
    if not _too_long_for_messages(diagnosis):
        return ()
    return (
        Attachment(
            filename=f"{incident.id}-evidence.txt",
            title=f"Evidence for {incident.id}",
            content=evidence_text(diagnosis),
        ),
    )


def render_diagnosis(incident: Incident, diagnosis: Diagnosis, *, ref: str) -> Message:
    top = diagnosis.top
    blocks: list[Block] = [
        *_root_cause(diagnosis),
        *_strongest_evidence(diagnosis),
        *_alternatives(diagnosis),
        *_similar(diagnosis),
        *_fallback(diagnosis),
    ]
    files = _evidence_file(incident, diagnosis)
    blocks.append(
        actions(
            button(
                "Details",
                action_id=ActionId.DETAILS,
                value=details_value(ref),
            )
        )
    )
    if diagnosis.tokens:
        blocks.append(context(f"{diagnosis.tokens} LLM tokens"))
    return Message(
        text=f"{incident.id}: root cause {top.service} ({top.category}, "
        f"{t.percent(top.confidence)})",
        blocks=tuple(blocks),
        files=files,
    )


def render_diagnosis_details(incident: Incident, diagnosis: Diagnosis) -> View:
    """Every piece of evidence, one block each (its detail as a code block); past the view's
    block limit the rest is counted and left to the attached file."""
    blocks: list[Block] = [
        section(
            f"*{escape(incident.id)}* — `{escape(diagnosis.root_cause_service)}` "
            f"{diagnosis.category} ({t.percent(diagnosis.confidence)})\n"
            f"{esc(diagnosis.summary, 2000)}"
        ),
    ]
    for number, hypothesis in enumerate(diagnosis.hypotheses[:5], start=1):
        blocks.append(
            context(
                f"{number}. `{escape(hypothesis.service)}` {hypothesis.category}"
                f"{_reason(hypothesis.reason)} "
                f"{t.percent(hypothesis.confidence)} — {esc(hypothesis.explanation, 600)}"
            )
        )
    blocks.append(divider())
    room = VIEW_BLOCKS_MAX - len(blocks) - 1
    for number, item in enumerate(diagnosis.evidence[:room], start=1):
        body = f"*{number}. {item.kind.value}* `{esc(item.source, 300)}`\n"
        body += esc(item.summary, 600)
        if item.detail:
            body += "\n" + code(item.detail, SECTION_TEXT_MAX - len(body) - 1)
        blocks.append(section(body))
    hidden = len(diagnosis.evidence) - room
    if hidden > 0:
        blocks.append(context(f"{hidden} more items are in the evidence file in the channel."))
    return View(
        callback_id=CallbackId.DETAILS,
        title="Evidence",
        blocks=tuple(blocks),
    )
