"""The assessment: what the diagnosis saw of the scope as a whole, for the planner's gates.

Hypotheses say what is *wrong*; the planner also needs to know what is *unwell* (no symptom,
no write: DESIGN section 3 rule 10), whether the best explanations are tied (ties go to a
person), and which reads failed (a diagnosis that could not read the cluster says so, never
"found nothing wrong"). It travels inside the diagnosis as one `Evidence` whose `source` is

    assessment:<namespace>

and whose `detail` is a JSON object with the keys of `Assessment`. A diagnosis without one
(hand-built, or from before this record existed) has no assessment: `Assessment.of` returns
None and the planner says so rather than guessing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from agents.model import Diagnosis, Evidence, EvidenceKind

PREFIX = "assessment:"

#: Gaps that are not failed cluster reads (a source that is not configured at all).
_NOT_CONFIGURED = ("no metrics source", "no change journal")


@dataclass(frozen=True, slots=True, kw_only=True)
class Assessment:
    #: Services with a symptom of their own (pods, Service endpoints, golden signals, alerts)
    #: or blamed by an unwell caller: the failing dependency path.
    unhealthy: tuple[str, ...] = ()
    #: Services whose hypotheses explain the incident about equally well (empty: no tie).
    tied: tuple[str, ...] = ()
    #: Reads that failed ("pods: connection refused"): what the diagnosis could not see.
    unread: tuple[str, ...] = ()

    @property
    def blind(self) -> bool:
        """A read of the cluster or the metrics failed: "nothing wrong" would be a guess."""
        return any(not g.startswith(_NOT_CONFIGURED) for g in self.unread)

    def summary(self) -> str:
        parts = [
            "unhealthy: " + (", ".join(self.unhealthy) or "none seen"),
        ]
        if self.tied:
            parts.append("tie between " + " and ".join(self.tied))
        if self.blind:
            parts.append(f"cannot read the cluster ({len(self.unread)} read(s) failed)")
        return "; ".join(parts)

    def to_evidence(self, namespace: str) -> Evidence:
        detail = {
            "unhealthy": list(self.unhealthy),
            "tied": list(self.tied),
            "unread": list(self.unread[:20]),
        }
        return Evidence(
            kind=EvidenceKind.ALERT if self.blind else EvidenceKind.POD_STATE,
            source=f"{PREFIX}{namespace}",
            summary=self.summary(),
            detail=json.dumps(detail, sort_keys=True),
        )

    @classmethod
    def of(cls, diagnosis: Diagnosis) -> Assessment | None:
        """The diagnosis's assessment, or None when it carries none."""
        for evidence in diagnosis.evidence:
            if not evidence.source.startswith(PREFIX):
                continue
            detail = evidence.detail_object()
            return cls(
                unhealthy=_strings(detail.get("unhealthy")),
                tied=_strings(detail.get("tied")),
                unread=_strings(detail.get("unread")),
            )
        return None


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value)


def tied_services(
    hypotheses: Iterable[tuple[str, float]], *, margin: float, related: set[frozenset[str]]
) -> tuple[str, ...]:
    """The services of the top hypotheses when the best two, on different services not
    related by depth (one explaining the other), score within `margin`: a tie. Names never
    break it."""
    ranked = list(hypotheses)
    if len(ranked) < 2:
        return ()
    (first, top), *rest = ranked
    tied = [first]
    for service, confidence in rest:
        if service in tied:
            continue
        if top - confidence >= margin:
            break
        if frozenset((first, service)) in related:
            continue
        tied.append(service)
    return tuple(tied) if len(tied) > 1 else ()
