"""What the incident loop announces. Agents return values; the bot decides how to say them.

Every event is emitted after the state it reports was persisted (DESIGN section 2), so a
notifier that crashes or drops a message never loses state — a restart re-renders from
storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from agents.model import Diagnosis, Incident, IncidentState, Outcome
from agents.planning.plan import Escalation, Plan
from agents.tnr import Progress, UndoResult


@dataclass(frozen=True, slots=True, kw_only=True)
class StateChanged:
    incident: Incident
    previous: IncidentState
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosed:
    incident: Incident
    diagnosis: Diagnosis


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanProposed:
    incident: Incident
    plan: Plan


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRecorded:
    incident: Incident
    plan: Plan
    user: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanRejected:
    incident: Incident
    plan: Plan
    user: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionProgress:
    incident: Incident
    plan: Plan
    progress: Progress


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionFinished:
    incident: Incident
    plan: Plan
    outcome: Outcome
    validation: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Escalated:
    incident: Incident
    escalation: Escalation


@dataclass(frozen=True, slots=True, kw_only=True)
class Closed:
    incident: Incident
    summary: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Undone:
    incident: Incident | None
    result: UndoResult


IncidentEvent = (
    StateChanged
    | Diagnosed
    | PlanProposed
    | ApprovalRecorded
    | PlanRejected
    | TransactionProgress
    | TransactionFinished
    | Escalated
    | Closed
    | Undone
)


class Notifier(Protocol):
    def notify(self, event: IncidentEvent) -> None: ...


class RecordingNotifier:
    """Keeps every event (the headless driver, the bench and the tests)."""

    def __init__(self) -> None:
        self.events: list[IncidentEvent] = []

    def notify(self, event: IncidentEvent) -> None:
        self.events.append(event)

    def of_type(self, kind: type[object]) -> Sequence[IncidentEvent]:
        return [e for e in self.events if isinstance(e, kind)]
