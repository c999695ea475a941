"""Fitting evidence into a token budget.

A reasoner is only as good as the evidence it reads, and a prompt has a price: the bundle is
ranked (anomalies first, the suspect's own evidence first, changes near the incident start —
the collector's relevance plus what the offline verdict cites), each detail is capped so one
huge log cannot starve the rest, then items are taken greedily, truncating the detail of the
one that does not fit whole and dropping what does not fit at all. The estimate is
characters / 4 by default; any `TokenEstimator` can replace it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from agents.diagnosis.items import Item, clip
from agents.model import Evidence

TokenEstimator = Callable[[str], int]

_MIN_DETAIL_CHARS = 160


def estimate_tokens(text: str) -> int:
    """About four characters per token for English and logs; never zero for non-empty text."""
    return (len(text) + 3) // 4


def render(index: int, evidence: Evidence) -> str:
    """The text a reasoner sees for one piece of evidence (and what the budget counts)."""
    head = f"[{index}] {evidence.kind} {evidence.source}"
    if evidence.service:
        head += f" (service {evidence.service})"
    text = f"{head}: {evidence.summary}"
    if evidence.detail:
        text += "\n" + evidence.detail
    return text


def bundle_tokens(evidence: Sequence[Evidence], estimate: TokenEstimator = estimate_tokens) -> int:
    return sum(estimate(render(i, e)) + 1 for i, e in enumerate(evidence))


def fit(
    items: Sequence[Item],
    budget: int,
    *,
    cited: Sequence[str] = (),
    focus: Sequence[str] = (),
    estimate: TokenEstimator = estimate_tokens,
) -> tuple[list[Item], int]:
    """The items to keep, best first, and their estimated tokens (always ≤ budget)."""
    rank = {key: i for i, key in enumerate(cited)}
    focus_set = set(focus)

    def score(item: Item) -> float:
        s = item.relevance
        if item.key in rank:
            s += 0.6 - 0.01 * min(rank[item.key], 30)
        if item.evidence.service in focus_set:
            s += 0.15
        return s

    ordered = sorted(items, key=lambda it: (-score(it), it.key))
    detail_cap = max(_MIN_DETAIL_CHARS, budget * 4 // 6)  # one item ≤ ~1/6 of the budget
    kept: list[Item] = []
    used = 0
    for item in ordered:
        ev = item.evidence
        if len(ev.detail) > detail_cap:
            ev = replace(ev, detail=clip(ev.detail, detail_cap))
        index = len(kept)
        cost = estimate(render(index, ev)) + 1
        if used + cost > budget:
            room = budget - used - 1 - estimate(render(index, replace(ev, detail="")))
            if room * 4 >= _MIN_DETAIL_CHARS and ev.detail:
                ev = replace(ev, detail=clip(ev.detail, room * 4 - 8))
                while ev.detail and estimate(render(index, ev)) + 1 > budget - used:
                    shorter = len(ev.detail) - 64
                    ev = replace(ev, detail=clip(ev.detail, shorter) if shorter > 40 else "")
            else:
                ev = replace(ev, detail="")
            cost = estimate(render(index, ev)) + 1
            if used + cost > budget:
                continue
        kept.append(replace(item, evidence=ev))
        used += cost
    return kept, used
