"""Plans, escalations and attempts: what the planner proposes and what the loop learns.

A `Plan` is a ranked candidate of typed actions for one attempt of one incident. Its
`content_hash` binds approvals to its exact actions: change one field and every earlier
approval stops counting. An `Attempt` is a plan that ran, with the outcome and validation
figures the planner reflects on before proposing the next one (never the same plan twice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from agents.actions import Action, actions_hash
from agents.model import Diagnosis, Incident, IncidentId, Outcome, PlanId, PlanStatus, Risk
from agents.planning.grounding import Grounding


class _Actions:
    """What a proposed plan and a stored one derive alike from their actions."""

    __slots__ = ()
    actions: tuple[Action, ...]

    @property
    def content_hash(self) -> str:
        """Binds approvals to these exact actions."""
        return actions_hash(self.actions)

    @property
    def risk(self) -> Risk:
        """The riskiest action's."""
        return max((a.risk for a in self.actions), key=lambda r: r.rank, default=Risk.LOW)


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidatePlan(_Actions):
    """What the planner proposes, before it is stored as a `Plan`."""

    actions: tuple[Action, ...]
    rationale: str  # why these actions fix the diagnosed fault
    hypothesis: str  # "geo: virtualization/misconfiguration"
    confidence: float = 0.5
    #: Where the values it writes come from: its drafts' (`Draft.grounding`), the weakest
    #: when it joins several. `Grounding.REASONER` makes it a suggestion.
    grounding: Grounding = Grounding.SNAPSHOT
    #: Values only a reasoner proposed, each marked "not seen before in this cluster".
    suggestions: tuple[str, ...] = ()
    #: Why no autonomy level may run it: a person must approve (suggestions, a tie, a weak
    #: hypothesis). Empty: the namespace's autonomy decides.
    held: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan(_Actions):
    id: PlanId
    incident_id: IncidentId
    attempt: int
    rank: int
    actions: tuple[Action, ...]
    rationale: str
    hypothesis: str
    status: PlanStatus
    created_at: datetime
    expires_at: datetime | None = None
    diffs: tuple[str, ...] = ()  # the dry-run diff of each action, for the approval message
    decided_by: str | None = None
    reject_reason: str | None = None
    reflection: str = ""  # what earlier attempts showed and why this plan differs
    suggestions: tuple[str, ...] = ()  # values "not seen before in this cluster"
    held: tuple[str, ...] = ()  # why a person must approve it at every autonomy level

    @property
    def runs_unattended(self) -> bool:
        """False when the plan must wait for a person whatever the autonomy level."""
        return not self.held and not self.suggestions

    def describe(self) -> str:
        return "; ".join(a.describe() for a in self.actions)


@dataclass(frozen=True, slots=True, kw_only=True)
class Escalation:
    """No admissible action can fix this: a human must act, and here is how."""

    reason: str
    runbook: str  # markdown steps for a human


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    plan: Plan
    outcome: Outcome
    validation: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    candidates: tuple[CandidatePlan, ...] = ()  # ranked, best first
    escalation: Escalation | None = None
    reflection: str = ""
    #: Actions refused outright (outside the policy's bounds or the incident's namespace),
    #: one line each: counted, logged and shown, never proposed.
    refused: tuple[str, ...] = ()
    #: Drafts dropped by the symptom gate (no symptom, no write), one line each.
    dropped: tuple[str, ...] = ()


class Planner(Protocol):
    def plan(
        self,
        incident: Incident,
        diagnosis: Diagnosis,
        attempts: Sequence[Attempt],
        *,
        now: datetime,
    ) -> Proposal:
        """Ranked candidate plans for the next attempt, excluding every plan already tried,
        or an escalation when no admissible action can fix the diagnosed fault."""
        ...
