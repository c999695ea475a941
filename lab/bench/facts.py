"""What one run left behind, as plain values: the facts scoring reads.

The runner gathers them from the lab (injections, oracle samples, the end state of workloads)
and from the run's own SQLite store (incidents, timelines, diagnoses, transactions, undo
entries, audit records). Scoring (`lab.bench.score`) is then a pure function of these values,
so it is tested without a lab. Times are lab seconds since the scenario started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.model import JsonObject


@dataclass(frozen=True, slots=True, kw_only=True)
class Hypothesis:
    service: str
    category: str
    confidence: float


@dataclass(frozen=True, slots=True, kw_only=True)
class DiagnosisFacts:
    at_s: float
    hypotheses: tuple[Hypothesis, ...]  # ranked, best first
    reasoner: str
    tokens: int
    evidence_tokens: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionFacts:
    id: str
    status: str  # TransactionStatus value
    mu0: float
    mu_before: float
    mu_after: float | None  # what the engine recorded (None: it did not validate)
    #: μ at the transaction's boundary: the engine's own figure, or (no validation) the bench's
    #: measurement one sustain window after the last write, over that window.
    boundary_mu: float | None
    started_s: float
    ended_s: float | None
    entries: int  # undo entries written
    restored: int  # undo entries re-applied by an abort (a rollback)
    plan: str  # what it did, in words
    actions: tuple[str, ...] = ()  # each of its actions, in words
    #: The bench's own μ at the first step after the transaction's boundary, measured the same
    #: way for every agent (SLOs over one sustain window, alerts that started in it): what the
    #: run without any write is compared with (`lab.bench.counterfactual`). None: not measured
    #: (an outage).
    check_mu: float | None = None
    check_at_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteFacts:
    at_s: float
    transaction_id: str | None
    description: str
    target: str  # "Deployment/ns/name"
    has_undo_entry: bool  # the write's undo entry exists and was applied (or restored)
    admissible: bool  # the action passes admission for the incident's scope
    why_not: str = ""  # admission's refusal, when it did not


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentFacts:
    id: str
    opened_s: float
    closed_s: float | None
    state: str  # its state at the end of the run
    states: tuple[str, ...]  # every state its timeline went through, in order
    diagnoses: tuple[DiagnosisFacts, ...]
    transactions: tuple[TransactionFacts, ...]
    refused_plans: int  # plans refused by admission (never executed)
    #: Whether the oracle said the app was healthy when it opened (no fault yet, or mitigated).
    opened_while_healthy: bool = False

    @property
    def escalated(self) -> bool:
        return "escalated" in self.states

    @property
    def resolved(self) -> bool:
        return "resolved" in self.states


@dataclass(frozen=True, slots=True, kw_only=True)
class InjectionFacts:
    fault: str
    target: str
    at_s: float
    root_causes: tuple[str, ...]
    category: str | None
    undoable_fix: bool
    expires_s: float | None  # a time-bounded fault lifts by itself then
    changes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OracleSample:
    at_s: float
    mitigated: bool


def healthy_at(samples: Sequence[OracleSample], first_fault_s: float | None, at_s: float) -> bool:
    """Whether the app counts as healthy at `at_s`: no real fault injected by then, or the
    oracle had seen the fault and its last sample by then said mitigated again (fixed, or the
    fault lifted). Before the oracle has seen the fault at all, it is not: whatever opens or is
    written then is the fault's."""
    if first_fault_s is None or at_s < first_fault_s:
        return True
    seen = [s for s in samples if first_fault_s <= s.at_s <= at_s]
    if all(s.mitigated for s in seen):
        return False
    return seen[-1].mitigated


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFacts:
    """Everything scoring needs about one run."""

    injections: tuple[InjectionFacts, ...]
    noise: tuple[str, ...]  # what each noise step did
    incidents: tuple[IncidentFacts, ...]  # in the order they opened
    writes: tuple[WriteFacts, ...]
    samples: tuple[OracleSample, ...]  # the combined oracle every few lab seconds
    final_problems: tuple[str, ...]  # the combined oracle at the end (empty: mitigated)
    harmful: tuple[str, ...]  # baseline workloads deleted or at zero at the end, not by a fault
    lab_s: float  # how long the run lasted
    end_reason: str
    #: Collateral drift (`lab.bench.drift`): `Kind/name path: before → after`, one per field.
    drift: tuple[str, ...] = ()
    #: `Kind/name` of every object a fault or noise step changed.
    faulted: tuple[str, ...] = ()
    #: What the fallible planner did, per plan it was asked for (`lab.bench.fallible`).
    plan_noise: tuple[str, ...] = ()
    #: `--chaos`: each outage (`kind on–off s`), and the commits an outage left unmeasured.
    outages: tuple[str, ...] = ()
    unmeasured_commits: tuple[str, ...] = ()
    extra: JsonObject = field(default_factory=dict)

    @property
    def first_fault_s(self) -> float | None:
        real = [i.at_s for i in self.injections if i.fault != "no-fault"]
        return min(real) if real else None

    def healthy_at(self, at_s: float) -> bool:
        return healthy_at(self.samples, self.first_fault_s, at_s)
