"""Evidence items: an `Evidence` plus what the budget and the reasoners need to handle it —
a stable key to cite, how relevant it looks, and when it happened.

Formatting lives here too, so that every piece of evidence has the same shape: a one-line
`summary` a human reads and a bounded, redacted `detail`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from agents.diagnosis.ports import Redactor
from agents.model import Evidence, EvidenceKind

#: Hard cap of one evidence detail before any budgeting, in characters.
DETAIL_CAP = 6000
SUMMARY_CAP = 240


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    key: str
    evidence: Evidence
    relevance: float  # 0..1: anomalies high, routine state low
    at: datetime | None = None

    def with_relevance(self, relevance: float) -> Item:
        return replace(self, relevance=max(0.0, min(1.0, relevance)))


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    marker = f" …[{len(text) - limit} chars cut]"
    return text[: max(0, limit - len(marker))] + marker


def clip_lines(lines: list[str], keep: int, line_cap: int = 400) -> str:
    """The last `keep` lines, each cut to `line_cap` characters."""
    shown = [clip(line, line_cap) for line in lines[-keep:]]
    dropped = len(lines) - len(shown)
    head = [f"… {dropped} earlier lines not shown"] if dropped > 0 else []
    return "\n".join(head + shown)


def make_item(
    *,
    key: str,
    kind: EvidenceKind,
    source: str,
    summary: str,
    redactor: Redactor,
    service: str | None = None,
    detail: str = "",
    relevance: float = 0.3,
    at: datetime | None = None,
) -> Item:
    """Redacts and bounds the texts; the only way the collector makes evidence."""
    one_line = " ".join(redactor(summary).split())
    return Item(
        key=key,
        evidence=Evidence(
            kind=kind,
            source=redactor(source),
            summary=clip(one_line, SUMMARY_CAP),
            service=service,
            detail=clip(redactor(detail), DETAIL_CAP),
        ),
        relevance=max(0.0, min(1.0, relevance)),
        at=at,
    )
