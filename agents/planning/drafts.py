"""What a planning rule returns: drafts of plans, tiered, or the reason nothing can help.

A rule looks at one hypothesis and its suspects and answers with `Options`: drafts (actions
plus the rationale a human approves) in the tier they belong to, and — when no action in the
catalog can fix what the hypothesis describes — an `Escalation` with the runbook a person
follows. The planner ranks drafts across hypotheses, bounds them to K actions and turns them
into `CandidatePlan`s.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from agents.actions import Action
from agents.planning.grounding import NOT_SEEN, Grounding
from agents.planning.plan import Escalation


class Tier(IntEnum):
    """Within a hypothesis: put it back first, then a fix derived from the cluster's state,
    then a generic restart."""

    RESTORE = 0
    DERIVED = 1
    GENERIC = 2

    @property
    def weight(self) -> float:
        return {0: 1.0, 1: 0.9, 2: 0.6}[self.value]


@dataclass(frozen=True, slots=True, kw_only=True)
class Draft:
    tier: Tier
    actions: tuple[Action, ...]
    rationale: str
    #: Where the values its actions write come from, set by the rule from the `Was` it chose
    #: (`Was.grounding`). The default covers a value derived from the live objects or no
    #: value at all (a restart). `Grounding.REASONER` makes the draft a suggestion: the
    #: planner marks its plan and no autonomy level runs it.
    grounding: Grounding = Grounding.SNAPSHOT

    @property
    def suggestion(self) -> bool:
        return not self.grounding.grounded


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    drafts: tuple[Draft, ...] = ()
    #: No catalog action can fix this hypothesis (data plane, network, inadmissible write).
    escalation: Escalation | None = None

    def __add__(self, other: Options) -> Options:
        return Options(
            drafts=self.drafts + other.drafts, escalation=self.escalation or other.escalation
        )


NOTHING = Options()


@dataclass(frozen=True, slots=True, kw_only=True)
class Was:
    """A last-known-good value and where it came from. A value only a reasoner named
    (`Grounding.REASONER`) says so in its `source` with the `NOT_SEEN` mark, for the text;
    the rule copies `grounding` onto its `Draft`, which is what the planner acts on."""

    value: Any
    source: str
    grounding: Grounding = Grounding.JOURNAL

    @property
    def suggestion(self) -> bool:
        return not self.grounding.grounded


__all__ = ["NOTHING", "NOT_SEEN", "Draft", "Options", "Tier", "Was"]
