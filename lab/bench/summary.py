"""Summaries: the scored runs of one agent → its `AgentSummary`, the figures of the report.

Every figure is a count, total or rate over one group of runs (all scored runs, those with
faults, the undoable, the unfixable, the controls); runs that hit a scenario error are left
out. What each figure means for a reader of the report: `lab/scenarios/README.md` ("Figures").
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lab.bench.results import AgentSummary, RunResult
from lab.bench.scenario import Expect


def _rate(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _count(runs: Sequence[RunResult], test: Callable[[RunResult], bool]) -> int:
    return sum(1 for r in runs if test(r))


def _total(runs: Sequence[RunResult], figure: Callable[[RunResult], int]) -> int:
    return sum(figure(r) for r in runs)


def _rate_of(runs: Sequence[RunResult], flag: Callable[[RunResult], bool | None]) -> float:
    """The share of `runs` for which `flag` holds (None counts as not)."""
    return _rate([bool(flag(r)) for r in runs])


def _replaced_plans(run: RunResult) -> int:
    """Plans the fallible planner replaced: its line for one reads `… → how: …`."""
    return sum(1 for line in run.plan_noise if "→" in line)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Runs:
    """One agent's runs that could be scored (scenario errors left out), by expectation."""

    scored: tuple[RunResult, ...]
    faulty: tuple[RunResult, ...]  # with faults: expect mitigated or escalated
    undoable: tuple[RunResult, ...]  # expect: mitigated
    unfixable: tuple[RunResult, ...]  # expect: escalated
    controls: tuple[RunResult, ...]  # expect: no-incident

    @classmethod
    def of(cls, results: Sequence[RunResult]) -> _Runs:
        scored = tuple(r for r in results if not r.scenario_error)
        return cls(
            scored=scored,
            faulty=tuple(r for r in scored if r.expect != Expect.NO_INCIDENT.value),
            undoable=_expecting(scored, Expect.MITIGATED),
            unfixable=_expecting(scored, Expect.ESCALATED),
            controls=_expecting(scored, Expect.NO_INCIDENT),
        )


def _expecting(runs: Sequence[RunResult], expect: Expect) -> tuple[RunResult, ...]:
    return tuple(r for r in runs if r.expect == expect.value)


def summarize(agent: str, description: str, results: Sequence[RunResult]) -> AgentSummary:
    runs = _Runs.of(results)
    scored, faulty, undoable = runs.scored, runs.faulty, runs.undoable
    return AgentSummary(
        agent=agent,
        description=description,
        scenarios=len(scored),
        crashed=_count(scored, lambda r: r.error_kind == "crash"),
        detection_accuracy=_rate_of(scored, lambda r: r.detection_correct),
        false_positive_incidents=_total(scored, lambda r: r.false_positive_incidents),
        localization_acc1=_rate_of(faulty, lambda r: r.localized_acc1),
        localization_acc3=_rate_of(faulty, lambda r: r.localized_acc3),
        category_accuracy=_rate_of(faulty, lambda r: r.category_correct),
        mitigation_success_rate=_rate_of(faulty, lambda r: r.mitigated),
        median_ttm_s=_median([r.ttm_s for r in undoable if r.mitigated]),
        tnr_violations=_total(scored, lambda r: r.tnr_violations),
        harmful_end_states=_total(scored, lambda r: len(r.harmful_end_states)),
        healed_without_page_rate=_rate_of(undoable, lambda r: r.healed_without_page),
        pages=_total(scored, lambda r: r.pages),
        collateral_drift=_total(scored, lambda r: len(r.collateral_drift)),
        runs_with_drift=_count(scored, lambda r: bool(r.collateral_drift)),
        writes_outside_truth=_total(scored, lambda r: len(r.writes_outside_truth)),
        noisy_plans=_total(scored, _replaced_plans),
        escalations=_count(scored, lambda r: r.escalated),
        rollbacks=_total(scored, lambda r: r.rollbacks),
        acted_when_wrong=_count(scored, lambda r: r.acted_when_wrong),
        abstained=_count(scored, lambda r: r.abstained),
        outages=_total(scored, lambda r: len(r.outages)),
        unmeasured_commits=_total(scored, lambda r: len(r.unmeasured_commits)),
        mitigated_rate_undoable=_rate_of(undoable, lambda r: r.mitigated),
        escalated_rate_unfixable=_rate_of(runs.unfixable, lambda r: r.mitigated),
        control_success_rate=_rate_of(runs.controls, lambda r: r.mitigated),
        first_plan_success_rate=_rate_of(undoable, lambda r: r.first_plan_fixed),
        median_ttd_s=_median([r.ttd_s for r in faulty if r.detected]),
        median_ttl_s=_median([r.ttl_s for r in faulty]),
        incidents=_total(scored, lambda r: r.incidents),
        attempts=_total(scored, lambda r: r.attempts),
        actions=_total(scored, lambda r: r.actions),
        writes_while_healthy=_total(scored, lambda r: r.writes_while_healthy),
        tokens=_total(scored, lambda r: r.tokens),
        max_evidence_tokens=max((r.evidence_tokens for r in scored), default=0),
    )
