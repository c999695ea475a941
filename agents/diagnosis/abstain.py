"""Abstaining: what a diagnosis says when it is not sure enough to act on.

A confident wrong write is the worst outcome an incident bot can have; an abstention is a good
one, if it leaves the person on call better placed than the alert did. So when the best
hypothesis is weak, or two unrelated services explain the symptoms about equally well, the
diagnosis ends with what is known (which services are unwell and the reasons the cluster
prints), what is not (which of the candidates is the cause), the top three hypotheses with
their evidence, and read-only commands to tell them apart. The planner holds every plan for a
person in that case (`agents.planning.planner`): no automatic change.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.model import Diagnosis, Evidence, FaultType, Hypothesis

#: Below this confidence the best hypothesis is weak: Stratus abstains from automatic changes.
WEAK = 0.3


def abstains(diagnosis: Diagnosis, tied: Sequence[str]) -> bool:
    """Weak or tied, and something is wrong ("nothing looks wrong" says so on its own)."""
    if diagnosis.top.category.type is FaultType.NONE:
        return False
    return bool(tied) or diagnosis.top.confidence < WEAK


def abstention(
    diagnosis: Diagnosis, *, namespace: str, tied: Sequence[str], unhealthy: Sequence[str]
) -> str:
    """The text appended to an abstaining diagnosis's summary (markdown, one block)."""
    top3 = list(diagnosis.hypotheses[:3])
    why = (
        f"{' and '.join(tied)} explain the symptoms about equally well"
        if tied
        else f"the best hypothesis is weak ({diagnosis.top.confidence:.0%})"
    )
    lines = [f"*No automatic change:* {why}."]
    known = [f"unwell: {', '.join(unhealthy)}" if unhealthy else "no service measures unwell"]
    known += [f"{h.service} shows {h.reason}" for h in top3 if h.reason]
    lines.append(f"*Known:* {'; '.join(dict.fromkeys(known))}.")
    lines.append(
        "*Not known:* which of "
        + ", ".join(f"{h.service} ({h.category})" for h in top3)
        + " is the cause."
    )
    lines.append("*Top hypotheses:*")
    for n, h in enumerate(top3, start=1):
        lines.append(f"{n}. {_line(h, diagnosis.evidence)}")
    lines.append("*Read-only next steps:*")
    for command in next_steps(top3, namespace):
        lines.append(f"• `{command}`")
    return "\n".join(lines)


def _line(h: Hypothesis, evidence: Sequence[Evidence]) -> str:
    cited = [evidence[i].summary for i in h.evidence[:2] if 0 <= i < len(evidence)]
    reason = f", {h.reason}" if h.reason else ""
    text = f"{h.service} — {h.category}{reason}, {h.confidence:.0%}: {_clip(h.explanation)}"
    return text + (f" (evidence: {'; '.join(_clip(c, 120) for c in cited)})" if cited else "")


def next_steps(hypotheses: Sequence[Hypothesis], namespace: str) -> list[str]:
    """Commands that read and never write, for each distinct service among the hypotheses."""
    out: list[str] = []
    for service in dict.fromkeys(h.service for h in hypotheses):
        ns = f"-n {namespace}"
        out += [
            f"kubectl {ns} describe deployment/{service}",
            f"kubectl {ns} logs deployment/{service} --tail=50 --previous",
            f"kubectl {ns} rollout history deployment/{service}",
        ]
    out.append(f"kubectl -n {namespace} get events --sort-by=.lastTimestamp")
    return out


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
