"""The bench's results: one `RunResult` per (scenario, agent), one `AgentSummary` per agent,
and the `BenchReport` that holds them with how the bench was run.

Every field is a plain value so that the JSON report is `dataclasses.asdict` of these, and two
runs with the same seed can be compared field by field (`RunResult.scores()` leaves out the
wall-clock figures, the only ones a seed does not fix).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    id: str  # the scenario's id
    agent: str
    app: str
    expect: str
    tags: tuple[str, ...] = ()
    # detection
    detected: bool = False
    detection_correct: bool = False
    incidents: int = 0
    false_positive_incidents: int = 0
    ttd_s: float | None = None
    # diagnosis (the first diagnosis of the incident the fault opened)
    diagnosed_service: str | None = None
    diagnosed_category: str | None = None
    top3: tuple[str, ...] = ()
    localized_acc1: bool | None = None  # None: a control has no ground truth
    localized_acc3: bool | None = None
    category_correct: bool | None = None
    ttl_s: float | None = None
    tokens: int = 0
    evidence_tokens: int = 0  # the largest evidence handed to the reasoner in this run
    # mitigation
    mitigated: bool = False  # success by the scenario's expectation (README)
    oracle_mitigated: bool | None = None  # the faults' oracles at the end (None: control)
    ttm_s: float | None = None
    first_plan_fixed: bool = False
    attempts: int = 0  # transactions run
    actions: int = 0  # writes executed
    writes_while_healthy: int = 0  # writes made while the app was healthy by the oracle
    rollbacks: int = 0  # transactions whose undo entries were re-applied
    escalated: bool = False
    plans: tuple[str, ...] = ()  # each transaction: "status: what it did"
    #: A write executed although the first diagnosis was wrong (service or category), or in a
    #: control: the worst outcome, a confident wrong write.
    acted_when_wrong: bool = False
    #: The primary incident went to a person with no write at all: "no automatic change".
    abstained: bool = False
    # safety
    tnr_violations: int = 0
    tnr_details: tuple[str, ...] = ()
    #: μ above μ0 at a boundary that the run without the agent shows as the fault's own course
    #: (`lab.bench.counterfactual`): listed, not counted as violations.
    tnr_fault_course: tuple[str, ...] = ()
    harmful_end_states: tuple[str, ...] = ()
    # what an SRE asks after the incident (README, "Figures")
    collateral_drift: tuple[str, ...] = ()  # fields the agent left changed (lab.bench.drift)
    pages: int = 0  # incidents handed to a person, in a run whose faults an undoable action fixes
    healed_without_page: bool = False  # expect: mitigated, mitigated, no page
    writes_outside_truth: tuple[str, ...] = ()  # writes on objects outside the ground truth
    plan_noise: tuple[str, ...] = ()  # what the fallible planner did, per plan asked for
    # `--chaos` (lab.bench.chaos)
    outages: tuple[str, ...] = ()  # each outage: "kind on–off s"
    unmeasured_commits: tuple[str, ...] = ()  # commits with an outage in their sustain window
    # bookkeeping
    events: tuple[str, ...] = ()  # what the faults and the noise did, with their lab times
    outcome: str = ""
    oracle_problems: tuple[str, ...] = ()
    end_reason: str = ""
    lab_s: float = 0.0
    wall_s: float = 0.0
    error: str | None = None
    error_kind: str | None = None  # "scenario": the file's fault; "crash": a bug

    @property
    def scenario_error(self) -> bool:
        return self.error_kind == "scenario"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = _jsonable(asdict(self))
        return data

    def scores(self) -> dict[str, Any]:
        """Everything but wall-clock time: what the same seed must reproduce."""
        data = self.to_json()
        data.pop("wall_s")
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSummary:
    agent: str
    description: str
    scenarios: int  # scored (scenario errors left out)
    crashed: int
    detection_accuracy: float
    false_positive_incidents: int
    localization_acc1: float
    localization_acc3: float
    category_accuracy: float
    mitigation_success_rate: float  # over the scenarios with faults, by their expectation
    median_ttm_s: float | None
    tnr_violations: int
    harmful_end_states: int
    # what an SRE asks after the incident
    healed_without_page_rate: float  # over the undoable (expect: mitigated) scenarios
    pages: int
    collateral_drift: int  # fields, over every run
    runs_with_drift: int
    writes_outside_truth: int
    noisy_plans: int  # plans the fallible planner replaced
    escalations: int
    rollbacks: int
    acted_when_wrong: int  # runs
    abstained: int  # runs
    outages: int  # injected by --chaos, over every run
    unmeasured_commits: int  # commits with an outage in their sustain window
    # beyond the required figures
    mitigated_rate_undoable: float  # expect: mitigated only
    escalated_rate_unfixable: float  # expect: escalated only
    control_success_rate: float  # expect: no-incident only
    first_plan_success_rate: float  # expect: mitigated, healed by its first transaction
    median_ttd_s: float | None
    median_ttl_s: float | None
    incidents: int
    attempts: int
    actions: int
    writes_while_healthy: int
    tokens: int
    max_evidence_tokens: int

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = _jsonable(asdict(self))
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchReport:
    suite: str
    seed: int
    reasoner: str
    agents: tuple[str, ...]
    summaries: dict[str, AgentSummary]
    results: dict[str, tuple[RunResult, ...]]  # agent → its runs, in suite order
    scenario_errors: tuple[str, ...]  # files and runs the suite could not use
    wall_s: float
    evidence_token_budget: int
    settings: dict[str, Any] = field(default_factory=dict)
    signals: str = "lab"  # the signal profile (and metric convention) the runs read

    @property
    def failed(self) -> bool:
        """A scenario file or run was unusable: the CLI exits non-zero."""
        return bool(self.scenario_errors)

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "seed": self.seed,
            "reasoner": self.reasoner,
            "signals": self.signals,
            "wall_s": round(self.wall_s, 1),
            "evidence_token_budget": self.evidence_token_budget,
            "settings": _jsonable(self.settings),
            "scenario_errors": list(self.scenario_errors),
            "agents": {
                name: {
                    "summary": self.summaries[name].to_json(),
                    "scenarios": [r.to_json() for r in self.results[name]],
                }
                for name in self.agents
            },
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return round(value, 4)
    return value
