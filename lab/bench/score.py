"""Scoring: the facts of one run → its `RunResult` (one agent's summary: `lab.bench.summary`).

Pure functions of `RunFacts` and the scenario, documented for readers of the report in
`lab/scenarios/README.md` ("How each expectation is scored", "Figures"). The rules, briefly:

* The *primary* incident is the first one the fault opened: opened at or after the first fault,
  while the app was not healthy by the oracle. Any incident opened while it was (before the
  first fault, after a fix, in a control) is a false positive.
* Diagnosis figures read the primary incident's first diagnosis (what was posted first).
* TNR violations: μ above μ0 at a transaction's boundary, a write without an applied undo
  entry, an action admission refuses that was written anyway.
* Harmful end states: a workload of the baseline (before any fault) deleted or at zero replicas
  at the end, unless a fault put it there.
* Collateral drift (`lab.bench.drift`): fields of objects the agent wrote that differ at the
  end from before the first fault, other than a fault's value left in place.
* Pages: in a scenario whose faults an undoable action fixes (expect: mitigated), every incident
  handed to a person — escalated, or left waiting for an approval.
* Writes outside the ground truth: a write on an object that is neither a root-cause service's
  (its workload, Service or pods) nor one a fault changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agents.model import IncidentState, TransactionStatus
from lab.bench import counterfactual
from lab.bench.errors import ScenarioRunError
from lab.bench.facts import (
    DiagnosisFacts,
    IncidentFacts,
    RunFacts,
    TransactionFacts,
    WriteFacts,
)
from lab.bench.results import RunResult
from lab.bench.scenario import Expect, GroundTruthSpec, TimeLimits
from lab.bench.suite import LoadedScenario


def check_truth(loaded: LoadedScenario, facts: RunFacts) -> None:
    """The scenario's ground truth must agree with what the fault library recorded for its
    injections: a scenario cannot grade against a different answer than the lab's."""
    truth = loaded.scenario.ground_truth
    real = [i for i in facts.injections if i.fault != "no-fault"]
    if truth is None or not real:
        return
    recorded = {s for i in real for s in i.root_causes}
    if not recorded.intersection(truth.root_causes):
        raise ScenarioRunError(
            f"ground_truth.root_causes {truth.root_causes} names none of the injected faults' "
            f"root causes {sorted(recorded)}"
        )
    categories = {i.category for i in real if i.category}
    if not categories.intersection(truth.category):
        raise ScenarioRunError(
            f"ground_truth.category {truth.category} is none of the injected faults' "
            f"categories {sorted(categories)}"
        )


def _primary(facts: RunFacts) -> IncidentFacts | None:
    first = facts.first_fault_s
    if first is None:
        return None
    for incident in facts.incidents:
        open_at_fault = incident.closed_s is None or incident.closed_s > first
        if not incident.opened_while_healthy and (incident.opened_s >= first or open_at_fault):
            return incident
    return None


def _ttm(facts: RunFacts) -> float | None:
    """Lab seconds from the first fault until the oracle passed and kept passing to the end."""
    first = facts.first_fault_s
    if first is None or facts.final_problems:
        return None
    samples = [s for s in facts.samples if s.at_s >= first]
    last_bad = max((s.at_s for s in samples if not s.mitigated), default=None)
    if last_bad is None:
        return 0.0
    after = [s.at_s for s in samples if s.at_s > last_bad]
    return (after[0] if after else facts.lab_s) - first


def score_run(
    loaded: LoadedScenario,
    agent: str,
    facts: RunFacts,
    *,
    wall_s: float,
    without: Mapping[float, float] | None = None,
) -> RunResult:
    """`without`: μ by lab second in the run without the agent (`lab.bench.counterfactual`),
    at the times `counterfactual.times_in_question(facts)` asked for."""
    scenario = loaded.scenario
    expect = loaded.expect
    control = expect is Expect.NO_INCIDENT
    limits = scenario.time_limits
    truth = _Truth.of(scenario.ground_truth)
    detection = _score_detection(facts, control=control, limits=limits)
    diagnosis = _score_diagnosis(facts, detection.primary, truth, control=control)
    mitigation = _score_mitigation(
        facts,
        expect=expect,
        limits=limits,
        primary=detection.primary,
        diagnosis_ok=diagnosis.correct,
    )
    tnr = _tnr_violations(mitigation.transactions, facts.writes, without or {})
    aftermath = _score_aftermath(facts, expect=expect, success=mitigation.success, truth=truth)
    outcome = _outcome(
        expect=expect,
        success=mitigation.success,
        facts=facts,
        primary=detection.primary,
        ttm=mitigation.ttm,
        self_healed=mitigation.self_healed,
        attempts=len(mitigation.transactions),
        writes=len(facts.writes),
        false_positives=detection.false_positives,
        diagnosis_ok=diagnosis.correct,
    )
    return RunResult(
        id=scenario.id,
        agent=agent,
        app=scenario.app,
        expect=expect.value,
        tags=tuple(scenario.tags),
        detected=detection.detected,
        detection_correct=detection.correct,
        incidents=len(facts.incidents),
        false_positive_incidents=detection.false_positives,
        ttd_s=detection.ttd_s,
        diagnosed_service=diagnosis.service,
        diagnosed_category=diagnosis.category,
        top3=diagnosis.top3,
        localized_acc1=diagnosis.acc1,
        localized_acc3=diagnosis.acc3,
        category_correct=diagnosis.category_ok,
        ttl_s=diagnosis.ttl_s,
        tokens=diagnosis.tokens,
        evidence_tokens=diagnosis.evidence_tokens,
        mitigated=mitigation.success,
        oracle_mitigated=mitigation.oracle_ok,
        ttm_s=mitigation.ttm_s,
        first_plan_fixed=mitigation.first_plan_fixed,
        attempts=len(mitigation.transactions),
        actions=len(facts.writes),
        writes_while_healthy=mitigation.writes_while_healthy,
        rollbacks=mitigation.rollbacks,
        escalated=mitigation.escalated,
        plans=mitigation.plans,
        acted_when_wrong=bool(facts.writes) and (control or not diagnosis.correct),
        abstained=_abstained(facts, detection.primary),
        tnr_violations=len(tnr.violations),
        tnr_details=tnr.violations,
        tnr_fault_course=tnr.fault_course,
        harmful_end_states=facts.harmful,
        collateral_drift=facts.drift,
        pages=aftermath.pages,
        healed_without_page=aftermath.healed_without_page,
        writes_outside_truth=aftermath.writes_outside_truth,
        plan_noise=facts.plan_noise,
        outages=facts.outages,
        unmeasured_commits=facts.unmeasured_commits,
        events=(
            *(f"{i.at_s:.0f}s: {i.fault}: {'; '.join(i.changes)}" for i in facts.injections),
            *facts.noise,
        ),
        outcome=outcome,
        oracle_problems=facts.final_problems[:8],
        end_reason=facts.end_reason,
        lab_s=facts.lab_s,
        wall_s=wall_s,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Truth:
    """The scenario's ground truth as sets (both empty for a control)."""

    causes: frozenset[str]
    categories: frozenset[str]

    @classmethod
    def of(cls, truth: GroundTruthSpec | None) -> _Truth:
        if truth is None:
            return cls(causes=frozenset(), categories=frozenset())
        return cls(causes=frozenset(truth.root_causes), categories=frozenset(truth.category))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Detection:
    """Whether the run opened an incident, and the primary one (never for a control)."""

    primary: IncidentFacts | None
    false_positives: int
    detected: bool
    correct: bool
    ttd_s: float | None


def _score_detection(facts: RunFacts, *, control: bool, limits: TimeLimits) -> _Detection:
    first = facts.first_fault_s
    false_positives = [i for i in facts.incidents if control or i.opened_while_healthy]
    primary = None if control else _primary(facts)
    ttd = primary.opened_s - first if primary is not None and first is not None else None
    detected = bool(facts.incidents) if control else ttd is not None and ttd <= limits.detect
    return _Detection(
        primary=primary,
        false_positives=len(false_positives),
        detected=detected,
        correct=not detected if control else detected,
        ttd_s=ttd,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Diagnosis:
    """The primary incident's first diagnosis against the ground truth (a control: None)."""

    service: str | None
    category: str | None
    top3: tuple[str, ...]  # "service (category)", best first
    acc1: bool | None
    acc3: bool | None
    category_ok: bool | None
    ttl_s: float | None
    tokens: int  # over every diagnosis of the run
    evidence_tokens: int  # the largest evidence of any diagnosis of the run

    @property
    def correct(self) -> bool:
        """The top hypothesis names a root cause and a right category."""
        return bool(self.acc1) and bool(self.category_ok)


def _score_diagnosis(
    facts: RunFacts, primary: IncidentFacts | None, truth: _Truth, *, control: bool
) -> _Diagnosis:
    first_diagnosis = _first_diagnosis(primary)
    top = first_diagnosis.hypotheses[0] if first_diagnosis else None
    top3 = first_diagnosis.hypotheses[:3] if first_diagnosis else ()
    acc1 = acc3 = category_ok = None
    if not control:
        acc1 = top is not None and top.service in truth.causes
        acc3 = any(h.service in truth.causes for h in top3)
        category_ok = top is not None and top.category in truth.categories
    diagnoses = [d for i in facts.incidents for d in i.diagnoses]
    return _Diagnosis(
        service=top.service if top else None,
        category=top.category if top else None,
        top3=tuple(f"{h.service} ({h.category})" for h in top3),
        acc1=acc1,
        acc3=acc3,
        category_ok=category_ok,
        ttl_s=_ttl(facts, primary, truth),
        tokens=sum(d.tokens for d in diagnoses),
        evidence_tokens=max((d.evidence_tokens for d in diagnoses), default=0),
    )


def _first_diagnosis(primary: IncidentFacts | None) -> DiagnosisFacts | None:
    # Diagnosis: the primary incident's first diagnosis.
    return primary.diagnoses[0] if primary and primary.diagnoses else None


def _ttl(facts: RunFacts, primary: IncidentFacts | None, truth: _Truth) -> float | None:
    """Lab seconds from the first fault to the primary incident's first diagnosis whose top
    hypothesis is a root cause."""
    first = facts.first_fault_s
    if primary is None or first is None:
        return None
    return next(
        (
            d.at_s - first
            for d in primary.diagnoses
            if d.hypotheses and d.hypotheses[0].service in truth.causes
        ),
        None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Mitigation:
    """What the run's transactions achieved, judged by the scenario's expectation."""

    transactions: tuple[TransactionFacts, ...]  # every incident's, in the order they started
    escalated: bool  # the primary incident was escalated
    oracle_ok: bool | None  # the oracle at the end (None: a control)
    ttm: float | None  # until the oracle passed for good (None: a control, or it never did)
    self_healed: bool
    success: bool  # by the expectation
    ttm_s: float | None  # reported: only for a run that met expect: mitigated
    first_plan_fixed: bool
    writes_while_healthy: int

    @property
    def rollbacks(self) -> int:
        return sum(1 for t in self.transactions if t.restored > 0)

    @property
    def plans(self) -> tuple[str, ...]:
        return tuple(f"{t.status}: {t.plan}" for t in self.transactions)


def _score_mitigation(
    facts: RunFacts,
    *,
    expect: Expect,
    limits: TimeLimits,
    primary: IncidentFacts | None,
    diagnosis_ok: bool,
) -> _Mitigation:
    control = expect is Expect.NO_INCIDENT
    transactions = tuple(
        sorted((t for i in facts.incidents for t in i.transactions), key=lambda t: t.started_s)
    )
    escalated = primary.escalated if primary is not None else False
    oracle_ok = None if control else not facts.final_problems
    ttm = None if control else _ttm(facts)
    self_healed = _self_healed(facts, ttm)
    success = _success(
        facts,
        expect=expect,
        limits=limits,
        oracle_ok=oracle_ok,
        ttm=ttm,
        self_healed=self_healed,
        escalated=escalated,
        diagnosis_ok=diagnosis_ok,
    )
    mitigated = expect is Expect.MITIGATED and success
    return _Mitigation(
        transactions=transactions,
        escalated=escalated,
        oracle_ok=oracle_ok,
        ttm=ttm,
        self_healed=self_healed,
        success=success,
        ttm_s=ttm if mitigated else None,
        first_plan_fixed=mitigated and _healed_by_first(transactions, facts.first_fault_s, ttm),
        writes_while_healthy=sum(1 for w in facts.writes if control or facts.healthy_at(w.at_s)),
    )


def _self_healed(facts: RunFacts, ttm: float | None) -> bool:
    """The oracle passed for good only once a time-bounded fault had lifted by itself."""
    first = facts.first_fault_s
    expired = [i for i in facts.injections if i.expires_s is not None and first is not None]
    return (
        ttm is not None
        and first is not None
        and any(first + ttm >= (i.expires_s or 0.0) for i in expired)
    )


def _success(
    facts: RunFacts,
    *,
    expect: Expect,
    limits: TimeLimits,
    oracle_ok: bool | None,
    ttm: float | None,
    self_healed: bool,
    escalated: bool,
    diagnosis_ok: bool,
) -> bool:
    """Whether the run met its expectation (README: "How each expectation is scored")."""
    if expect is Expect.MITIGATED:
        success = bool(oracle_ok) and ttm is not None and ttm <= limits.mitigate
        return success and not self_healed
    if expect is Expect.ESCALATED:
        return escalated and not facts.writes and diagnosis_ok
    return not facts.incidents and not facts.writes


def _healed_by_first(
    transactions: Sequence[TransactionFacts], first: float | None, ttm: float | None
) -> bool:
    # Healed by its first transaction: it committed, and the oracle passed for good before any
    # other transaction started (later ones, on incidents that reopened, changed nothing).
    return (
        bool(transactions)
        and transactions[0].status == TransactionStatus.COMMITTED
        and ttm is not None
        and first is not None
        and (len(transactions) == 1 or first + ttm <= transactions[1].started_s)
    )


@dataclass(frozen=True, slots=True)
class _Tnr:
    violations: tuple[str, ...]
    fault_course: tuple[str, ...]  # μ above μ0 at the boundary, and as high without the agent


def _tnr_violations(
    transactions: Sequence[TransactionFacts],
    writes: Sequence[WriteFacts],
    without: Mapping[float, float],
) -> _Tnr:
    # Transactions are named by their order in the run (their ids are random).
    settled = {id(t) for t in counterfactual.in_question(transactions)}
    violations: list[str] = []
    course: list[str] = []
    for number, t in enumerate(transactions, start=1):
        if not counterfactual.above_mu0(t):
            continue
        text = (
            f"transaction {number} ({t.plan or 'no plan'}): μ {t.boundary_mu:g} above μ0 "
            f"{t.mu0:g} at its end ({t.status})"
        )
        why = counterfactual.fault_course(t, without) if id(t) in settled else None
        if why is None:
            violations.append(text)
        else:
            course.append(f"{text}; the fault's course: {why}")
    violations += [
        f"write without an applied undo entry: {w.description}"
        for w in writes
        if not w.has_undo_entry
    ]
    violations += [
        f"inadmissible action executed: {w.description} ({w.why_not})"
        for w in writes
        if not w.admissible
    ]
    return _Tnr(violations=tuple(violations), fault_course=tuple(course))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Aftermath:
    """What an SRE asks after the incident (README, "Figures"), beyond the run's own facts."""

    pages: int
    healed_without_page: bool
    writes_outside_truth: tuple[str, ...]


def _score_aftermath(
    facts: RunFacts, *, expect: Expect, success: bool, truth: _Truth
) -> _Aftermath:
    undoable = expect is Expect.MITIGATED
    pages = (
        sum(1 for i in facts.incidents if i.escalated or i.state == IncidentState.AWAITING_APPROVAL)
        if undoable
        else 0
    )
    faulted = frozenset(facts.faulted)
    outside = tuple(
        w.description
        for w in facts.writes
        if w.target and not _in_truth(w.target, truth.causes, faulted)
    )
    return _Aftermath(
        pages=pages,
        healed_without_page=undoable and success and pages == 0,
        writes_outside_truth=outside,
    )


def _abstained(facts: RunFacts, primary: IncidentFacts | None) -> bool:
    """The incident the fault opened was handed to a person (escalated, or left waiting for
    an approval) and nothing was written: the agent said it would not change anything."""
    if primary is None or facts.writes:
        return False
    return primary.escalated or primary.state == IncidentState.AWAITING_APPROVAL


def _in_truth(target: str, causes: frozenset[str], faulted: frozenset[str]) -> bool:
    """`Kind/ns/name`: an object of a root-cause service (its workload or Service by name, its
    pods by prefix), or one a fault or noise step changed."""
    parts = target.split("/")
    kind, name = parts[0], parts[-1]
    if f"{kind}/{name}" in faulted:
        return True
    if kind == "Pod":
        return any(name.startswith(f"{c}-") for c in causes)
    return name in causes


def _outcome(
    *,
    expect: Expect,
    success: bool,
    facts: RunFacts,
    primary: IncidentFacts | None,
    ttm: float | None,
    self_healed: bool,
    attempts: int,
    writes: int,
    false_positives: int,
    diagnosis_ok: bool,
) -> str:
    fp = f", {false_positives} false-positive incident(s)" if false_positives else ""
    if expect is Expect.NO_INCIDENT:
        if success:
            return "no incident, no write"
        return f"{len(facts.incidents)} incident(s), {writes} write(s)"
    if primary is None:
        return f"not detected; {writes} write(s){fp}"
    if expect is Expect.ESCALATED:
        said = _escalation_outcome(
            primary, success=success, writes=writes, diagnosis_ok=diagnosis_ok
        )
    else:
        said = _mitigation_outcome(
            primary, facts, success=success, ttm=ttm, self_healed=self_healed, attempts=attempts
        )
    return said + fp


def _escalation_outcome(
    primary: IncidentFacts, *, success: bool, writes: int, diagnosis_ok: bool
) -> str:
    """Expect escalated, the primary incident opened: what fell short (false positives aside)."""
    if success:
        return "escalated without a write"
    reasons = [] if primary.escalated else [f"did not escalate (ended {primary.state})"]
    if writes:
        reasons.append(f"{writes} write(s)")
    top = primary.diagnoses[0].hypotheses[0] if primary.diagnoses else None
    if top is None:
        reasons.append("no diagnosis")
    elif not diagnosis_ok:
        reasons.append(f"the diagnosis named {top.service} ({top.category})")
    head = "escalated, but " if primary.escalated else ""
    return head + "; ".join(reasons)


def _mitigation_outcome(
    primary: IncidentFacts,
    facts: RunFacts,
    *,
    success: bool,
    ttm: float | None,
    self_healed: bool,
    attempts: int,
) -> str:
    """Expect mitigated, the primary incident opened: how it ended (false positives aside)."""
    if success:
        return f"mitigated in {ttm:.0f}s, {attempts} attempt(s)"
    if self_healed:
        return f"healed only when the fault expired; {attempts} attempt(s)"
    problem = facts.final_problems[0] if facts.final_problems else "too late"
    state = "escalated" if primary.escalated else primary.state
    return f"not mitigated ({state}, {attempts} attempt(s)): {problem}"


def errored(
    loaded: LoadedScenario, agent: str, *, error: str, kind: str, wall_s: float
) -> RunResult:
    """A run that could not be scored: the scenario's problem, or a crash (scored as a failure)."""
    scenario = loaded.scenario
    control = loaded.expect is Expect.NO_INCIDENT
    return RunResult(
        id=scenario.id,
        agent=agent,
        app=scenario.app,
        expect=loaded.expect.value,
        tags=tuple(scenario.tags),
        localized_acc1=None if control else False,
        localized_acc3=None if control else False,
        category_correct=None if control else False,
        outcome=f"{kind} error: {error}",
        error=error,
        error_kind=kind,
        wall_s=wall_s,
    )
