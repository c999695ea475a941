"""Scoring is a pure function of a run's facts: each rule checked on hand-made facts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lab.bench import Expect, LoadedScenario, Scenario, counterfactual
from lab.bench.errors import ScenarioRunError
from lab.bench.facts import (
    DiagnosisFacts,
    Hypothesis,
    IncidentFacts,
    InjectionFacts,
    OracleSample,
    RunFacts,
    TransactionFacts,
    WriteFacts,
)
from lab.bench.score import check_truth, errored, score_run
from lab.bench.summary import summarize


def _scenario(expect: Expect, **changes: object) -> LoadedScenario:
    data: dict[str, object] = {
        "id": "sc",
        "app": "hotel-reservation",
        "description": "d",
        "faults": [{"fault": "wrong-target-port", "target": "geo", "at": 30}],
        "ground_truth": {"root_causes": ["geo"], "category": "virtualization/misconfiguration"},
        "time_limits": {"detect": 60, "mitigate": 300, "total": 900},
    }
    if expect is Expect.NO_INCIDENT:
        data["faults"] = [{"fault": "no-fault"}]
        del data["ground_truth"]
    data.update(changes)
    return LoadedScenario(
        scenario=Scenario.model_validate(data), file=str(Path("s.yaml")), expect=expect
    )


INJECTION = InjectionFacts(
    fault="wrong-target-port",
    target="geo",
    at_s=30.0,
    root_causes=("geo",),
    category="virtualization/misconfiguration",
    undoable_fix=True,
    expires_s=None,
    changes=("Service/geo: targetPort 8083 → 9999",),
)


def _diagnosis(
    at: float, *services: str, category: str = "virtualization/misconfiguration"
) -> DiagnosisFacts:
    return DiagnosisFacts(
        at_s=at,
        hypotheses=tuple(
            Hypothesis(service=s, category=category, confidence=0.9) for s in services
        ),
        reasoner="offline",
        tokens=100,
        evidence_tokens=5000,
    )


def _tx(**changes: object) -> TransactionFacts:
    base = TransactionFacts(
        id="tx-1",
        status="committed",
        mu0=10.0,
        mu_before=10.0,
        mu_after=0.0,
        boundary_mu=0.0,
        started_s=45.0,
        ended_s=110.0,
        entries=1,
        restored=0,
        plan="Set ports on Service/geo",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _write(**changes: object) -> WriteFacts:
    base = WriteFacts(
        at_s=46.0,
        transaction_id="tx-1",
        description="Set ports on Service/geo",
        target="Service/hotel-reservation/geo",
        has_undo_entry=True,
        admissible=True,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _incident(iid: str, opened: float, **changes: object) -> IncidentFacts:
    base = IncidentFacts(
        id=iid,
        opened_s=opened,
        closed_s=opened + 80,
        state="closed",
        states=(
            "detected",
            "diagnosing",
            "diagnosed",
            "planning",
            "executing",
            "resolved",
            "closed",
        ),
        diagnoses=(_diagnosis(opened, "geo", "search", "frontend"),),
        transactions=(_tx(),),
        refused_plans=0,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _facts(**changes: object) -> RunFacts:
    base = RunFacts(
        injections=(INJECTION,),
        noise=(),
        incidents=(_incident("inc-1", 40.0),),
        writes=(_write(),),
        samples=tuple(
            OracleSample(at_s=float(t), mitigated=not 35 <= t < 130) for t in range(30, 300, 5)
        ),
        final_problems=(),
        harmful=(),
        lab_s=300.0,
        end_reason="incidents ended",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_clean_fix_scores_detection_localisation_and_time_to_mitigate() -> None:
    result = score_run(_scenario(Expect.MITIGATED), "stratus", _facts(), wall_s=1.0)
    assert (result.detected, result.ttd_s, result.localized_acc1, result.category_correct) == (
        True,
        10.0,
        True,
        True,
    )
    assert result.mitigated and result.ttm_s == 100.0 and result.first_plan_fixed
    assert (result.attempts, result.actions, result.rollbacks, result.tnr_violations) == (
        1,
        1,
        0,
        0,
    )
    assert result.false_positive_incidents == 0 and result.tokens == 100
    assert result.scores() == {k: v for k, v in result.to_json().items() if k != "wall_s"}


def test_acc3_counts_a_right_second_guess_and_ttl_waits_for_a_right_first_one() -> None:
    incident = _incident(
        "inc-1",
        40.0,
        diagnoses=(_diagnosis(40.0, "search", "geo"), _diagnosis(120.0, "geo")),
    )
    result = score_run(
        _scenario(Expect.MITIGATED), "stratus", _facts(incidents=(incident,)), wall_s=0
    )
    assert (result.localized_acc1, result.localized_acc3, result.ttl_s) == (False, True, 90.0)


def test_incidents_opened_while_healthy_are_false_positives_not_the_primary() -> None:
    early = _incident("inc-0", 10.0, opened_while_healthy=True, transactions=(), diagnoses=())
    late = _incident("inc-9", 200.0, opened_while_healthy=True, transactions=())
    facts = _facts(incidents=(early, _incident("inc-1", 40.0), late))
    result = score_run(_scenario(Expect.MITIGATED), "stratus", facts, wall_s=0)
    assert result.false_positive_incidents == 2 and result.incidents == 3
    assert result.ttd_s == 10.0  # the primary is inc-1


def test_not_detected_within_the_limit() -> None:
    facts = _facts(incidents=(_incident("inc-1", 95.0),))
    result = score_run(_scenario(Expect.MITIGATED), "stratus", facts, wall_s=0)
    assert not result.detected and not result.detection_correct and result.ttd_s == 65.0


def test_a_fix_that_does_not_hold_or_comes_too_late_is_not_a_mitigation() -> None:
    not_holding = _facts(final_problems=("geo: 50% of requests fail",))
    assert not score_run(_scenario(Expect.MITIGATED), "a", not_holding, wall_s=0).mitigated
    late = _facts(
        samples=tuple(OracleSample(at_s=float(t), mitigated=t >= 400) for t in range(30, 500, 5)),
        lab_s=500.0,
    )
    result = score_run(_scenario(Expect.MITIGATED), "a", late, wall_s=0)
    assert not result.mitigated and result.oracle_mitigated


def test_a_time_bounded_fault_that_lifted_by_itself_is_not_credited() -> None:
    lifted = replace(INJECTION, expires_s=120.0)
    result = score_run(_scenario(Expect.MITIGATED), "a", _facts(injections=(lifted,)), wall_s=0)
    assert not result.mitigated and "expired" in result.outcome


def test_escalation_counts_only_without_a_write_and_with_the_right_diagnosis() -> None:
    escalated = _incident(
        "inc-1",
        40.0,
        states=("detected", "diagnosing", "diagnosed", "planning", "escalated", "closed"),
        transactions=(),
    )
    scenario = _scenario(Expect.ESCALATED)
    clean = _facts(incidents=(escalated,), writes=(), final_problems=("still broken",))
    assert score_run(scenario, "a", clean, wall_s=0).mitigated
    wrote = replace(clean, writes=(_write(),))
    assert not score_run(scenario, "a", wrote, wall_s=0).mitigated
    wrong = replace(clean, incidents=(replace(escalated, diagnoses=(_diagnosis(40.0, "search"),)),))
    assert not score_run(scenario, "a", wrong, wall_s=0).mitigated


def test_a_control_passes_only_without_incidents_and_writes() -> None:
    scenario = _scenario(Expect.NO_INCIDENT)
    quiet = _facts(injections=(), incidents=(), writes=(), samples=())
    result = score_run(scenario, "a", quiet, wall_s=0)
    assert result.mitigated and result.detection_correct and result.localized_acc1 is None
    noisy = replace(quiet, incidents=(_incident("inc-1", 100.0, transactions=()),))
    result = score_run(scenario, "a", noisy, wall_s=0)
    assert not result.mitigated and not result.detection_correct
    assert result.false_positive_incidents == 1


def test_tnr_violations_mu_above_mu0_a_write_without_undo_and_an_inadmissible_write() -> None:
    above = _tx(id="tx-2", status="committed", mu_after=None, boundary_mu=14.0)
    rolled_back_ok = _tx(id="tx-3", status="aborted", mu_after=8.0, boundary_mu=8.0, restored=1)
    unmeasured = _tx(id="tx-4", mu_after=None, boundary_mu=None)
    incident = _incident("inc-1", 40.0, transactions=(above, rolled_back_ok, unmeasured))
    writes = (
        _write(),
        _write(has_undo_entry=False, description="scale geo"),
        _write(admissible=False, why_not="outside the namespace", description="cordon"),
    )
    result = score_run(
        _scenario(Expect.MITIGATED),
        "naive",
        _facts(incidents=(incident,), writes=writes),
        wall_s=0,
    )
    assert result.tnr_violations == 3, result.tnr_details
    assert result.tnr_details[0].startswith(
        "transaction 1 (Set ports on Service/geo): μ 14 above μ0 10"
    )
    assert "without an applied undo entry: scale geo" in result.tnr_details[1]
    assert "inadmissible action executed: cordon (outside the namespace)" in result.tnr_details[2]
    assert result.rollbacks == 1 and result.attempts == 3 and not result.first_plan_fixed


def test_mu_above_mu0_is_the_faults_course_only_when_the_run_without_the_agent_is_as_bad() -> None:
    # Three rolled-back transactions, each ending with μ above μ0 while the fault spread.
    first = _tx(id="tx-1", status="aborted", boundary_mu=17.0, mu0=1.0, restored=1)
    first = replace(first, check_mu=20.0, check_at_s=430.0)
    # As bad as without the agent, but an earlier transaction kept a change: not settled.
    kept = _tx(id="tx-0", status="committed", started_s=10.0, boundary_mu=0.0, mu0=10.0)
    # Worse than without the agent: the write's doing.
    worse = replace(first, id="tx-2", started_s=200.0, check_mu=30.0, check_at_s=560.0)
    facts = _facts(incidents=(_incident("inc-1", 40.0, transactions=(first, worse)),))
    without = {430.0: 21.0, 560.0: 22.0}
    assert counterfactual.times_in_question(facts) == (430.0, 560.0)
    result = score_run(_scenario(Expect.MITIGATED), "stratus", facts, wall_s=0, without=without)
    assert result.tnr_violations == 1 and result.tnr_details[0].startswith("transaction 2 ")
    assert result.tnr_fault_course == (
        "transaction 1 (Set ports on Service/geo): μ 17 above μ0 1 at its end (aborted); the "
        "fault's course: μ 20 at 430 s, 21 at the same time in the run without the agent",
    )
    # Without the counterfactual's figures (an outage, or not run) both stay violations.
    assert score_run(_scenario(Expect.MITIGATED), "stratus", facts, wall_s=0).tnr_violations == 2
    kept_first = _facts(incidents=(_incident("inc-1", 40.0, transactions=(kept, first)),))
    assert counterfactual.times_in_question(kept_first) == ()
    result = score_run(
        _scenario(Expect.MITIGATED), "stratus", kept_first, wall_s=0, without=without
    )
    assert result.tnr_violations == 1 and result.tnr_fault_course == ()


def test_the_ground_truth_must_agree_with_the_fault_library() -> None:
    scenario = _scenario(
        Expect.MITIGATED,
        ground_truth={"root_causes": ["search"], "category": "virtualization/misconfiguration"},
    )
    with pytest.raises(ScenarioRunError, match="names none of the injected"):
        check_truth(scenario, _facts())
    scenario = _scenario(
        Expect.MITIGATED,
        ground_truth={"root_causes": ["geo"], "category": "application/code_defect"},
    )
    with pytest.raises(ScenarioRunError, match="category"):
        check_truth(scenario, _facts())
    check_truth(_scenario(Expect.MITIGATED), _facts())


def test_the_summary_leaves_scenario_errors_out_and_counts_crashes_as_failures() -> None:
    good = score_run(_scenario(Expect.MITIGATED), "stratus", _facts(), wall_s=1)
    control = score_run(
        _scenario(Expect.NO_INCIDENT, id="ctl"),
        "stratus",
        _facts(injections=(), incidents=(), writes=(), samples=()),
        wall_s=1,
    )
    crash = errored(
        _scenario(Expect.MITIGATED, id="xx"), "stratus", error="boom", kind="crash", wall_s=1
    )
    broken = errored(
        _scenario(Expect.MITIGATED, id="yy"),
        "stratus",
        error="bad noise",
        kind="scenario",
        wall_s=1,
    )
    summary = summarize("stratus", "full", [good, control, crash, broken])
    assert summary.scenarios == 3 and summary.crashed == 1
    assert summary.mitigation_success_rate == 0.5  # good ✓, crash ✗ (the control is not a fault)
    assert summary.detection_accuracy == pytest.approx(2 / 3)
    assert summary.control_success_rate == 1.0
    assert summary.median_ttm_s == 100.0


def test_writes_after_the_fix_count_as_writes_while_healthy_and_not_against_the_first_plan() -> (
    None
):
    fix = _tx()
    restart = _tx(id="tx-2", started_s=200.0, ended_s=200.0, plan="Restart the pods of geo")
    incidents = (
        _incident("inc-1", 40.0, transactions=(fix,)),
        _incident("inc-2", 200.0, transactions=(restart,), opened_while_healthy=True),
    )
    writes = (_write(), _write(at_s=200.0, transaction_id="tx-2", description="restart"))
    result = score_run(
        _scenario(Expect.MITIGATED),
        "stratus",
        _facts(incidents=incidents, writes=writes),
        wall_s=0,
    )
    assert result.mitigated and result.first_plan_fixed
    assert (result.attempts, result.actions, result.writes_while_healthy) == (2, 2, 1)
    assert result.false_positive_incidents == 1


def test_pages_count_only_where_an_undoable_action_fixes_the_fault() -> None:
    paged = _incident("inc-1", 40.0, states=("detected", "planning", "escalated"))
    facts = _facts(incidents=(paged,), writes=())
    mitigated = score_run(_scenario(Expect.MITIGATED), "naive", facts, wall_s=1.0)
    assert (mitigated.pages, mitigated.healed_without_page) == (1, False)
    clean = score_run(_scenario(Expect.MITIGATED), "stratus", _facts(), wall_s=1.0)
    assert (clean.pages, clean.healed_without_page) == (0, True)
    waiting = _incident("inc-1", 40.0, state="awaiting_approval", closed_s=None)
    held = score_run(_scenario(Expect.MITIGATED), "stratus", _facts(incidents=(waiting,)), wall_s=1)
    assert held.pages == 1 and not held.healed_without_page
    escalated = score_run(_scenario(Expect.ESCALATED), "stratus", facts, wall_s=1.0)
    assert escalated.pages == 0  # a fault no undoable action fixes: the page is the answer


def test_writes_outside_the_ground_truth_and_drift_reach_the_result_and_summary() -> None:
    decoy = _write(description="Roll back Deployment/search", target="Deployment/h/search")
    pod = _write(description="Delete Pod/h/geo-abc", target="Pod/h/geo-abc-12")
    config = _write(description="Set ConfigMap/h/geo-config", target="ConfigMap/h/geo-config")
    facts = _facts(
        writes=(_write(), decoy, pod, config),
        faulted=("ConfigMap/geo-config",),
        drift=("Deployment/search spec.template.spec.containers[s].image: v1 → v0",),
        plan_noise=("plan 1: a → wrong action: b", "plan 2: drawn wrong, no wrong plan"),
    )
    result = score_run(_scenario(Expect.MITIGATED), "naive", facts, wall_s=1.0)
    assert result.writes_outside_truth == ("Roll back Deployment/search",)
    assert result.collateral_drift == facts.drift
    summary = summarize("naive", "d", [result])
    assert (summary.writes_outside_truth, summary.collateral_drift, summary.runs_with_drift) == (
        1,
        1,
        1,
    )
    assert summary.noisy_plans == 1
    assert "collateral_drift" in result.to_json() and "pages" in summary.to_json()


def test_a_write_after_a_wrong_diagnosis_is_counted_as_acting_when_wrong() -> None:
    wrong = _incident("inc-1", 40.0, diagnoses=(_diagnosis(40.0, "search", "geo"),))
    result = score_run(_scenario(Expect.MITIGATED), "stratus", _facts(incidents=(wrong,)), wall_s=0)
    assert result.acted_when_wrong and not result.abstained
    right = score_run(_scenario(Expect.MITIGATED), "stratus", _facts(), wall_s=0)
    assert not right.acted_when_wrong
    # The right service with the wrong category is still a wrong diagnosis.
    miscat = _incident(
        "inc-1", 40.0, diagnoses=(_diagnosis(40.0, "geo", category="application/code_defect"),)
    )
    assert score_run(
        _scenario(Expect.MITIGATED), "stratus", _facts(incidents=(miscat,)), wall_s=0
    ).acted_when_wrong


def test_an_incident_handed_to_a_person_with_no_write_is_an_abstention() -> None:
    held = _incident(
        "inc-1",
        40.0,
        diagnoses=(_diagnosis(40.0, "search", "geo"),),
        transactions=(),
        states=("detected", "diagnosing", "diagnosed", "planning", "escalated", "closed"),
    )
    result = score_run(
        _scenario(Expect.MITIGATED), "stratus", _facts(incidents=(held,), writes=()), wall_s=0
    )
    assert result.abstained and not result.acted_when_wrong
    summary = summarize("stratus", "d", [result])
    assert (summary.abstained, summary.acted_when_wrong) == (1, 0)
    # A control with a write: acting when nothing was wrong.
    control = score_run(_scenario(Expect.NO_INCIDENT), "stratus", _facts(injections=()), wall_s=0)
    assert control.acted_when_wrong
