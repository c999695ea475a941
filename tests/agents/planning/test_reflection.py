"""Reflection (STRATUS): never the same plan twice, doubt for a refuted hypothesis, the next
fix of the same one when nothing was refuted, planning for what still fails after a partial
fix, an escalation listing the attempts when nothing is left — and the sentence saying why."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agents.actions import RolloutRestart
from agents.diagnosis.suspect import Suspect
from agents.model import Diagnosis, OutcomeKind
from agents.planning import CandidatePlan
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import World, hotel, shop
from tests.agents.planning.scene import NOW, Scene, attempt, diagnosis_of, propose


def kinds(candidate: CandidatePlan) -> list[str]:
    return [a.kind for a in candidate.actions]


@pytest.mark.parametrize("outcome", list(OutcomeKind))
def test_a_plan_that_ran_or_was_refused_is_never_proposed_again(outcome: OutcomeKind) -> None:
    scene = Scene.of(hotel(), lambda w: faults.image_pull(w, "geo", "search"))
    _, before = propose(scene, "search", "KubePodNotReady")
    tried = attempt(before.candidates[0], outcome, mu_after=None, reason="whatever happened")
    _, after = propose(scene, "search", "KubePodNotReady", attempts=[tried])
    hashes = {c.content_hash for c in after.candidates}
    assert before.candidates[0].content_hash not in hashes
    assert after.candidates[0].content_hash == before.candidates[1].content_hash


def test_a_restart_at_another_time_is_the_same_plan() -> None:
    scene = Scene.of(hotel(), lambda w: faults.pod_kill(w, "profile", caller="frontend"))
    _, before = propose(scene, "frontend")
    restart = next(c for c in before.candidates if kinds(c) == ["rollout_restart"])
    earlier = replace(
        restart,
        actions=tuple(
            replace(a, stamp="2026-11-30T09:00:00+00:00") if isinstance(a, RolloutRestart) else a
            for a in restart.actions
        ),
    )
    assert earlier.content_hash != restart.content_hash
    tried = attempt(earlier, OutcomeKind.ABORTED, mu_before=3, mu_after=3, reason="no improvement")
    _, after = propose(scene, "frontend", attempts=[tried])
    targets = [
        str(a.target) for c in after.candidates for a in c.actions if isinstance(a, RolloutRestart)
    ]
    assert str(restart.actions[0].target) not in targets


def _image_and_port(w: World) -> None:
    """Two changes to geo at once: a new image (which runs fine) and a wrong targetPort."""
    faults.target_port(w, "geo", 9999, caller="search", top="frontend")
    c = w.spec_container("geo")
    c["image"] = "ghcr.io/lab/hotel/hotelreservation:1.1"
    w.change(
        "Deployment",
        "geo",
        {
            "spec.template.spec.containers[0].image": (
                "ghcr.io/lab/hotel/hotelreservation:1.0",
                "ghcr.io/lab/hotel/hotelreservation:1.1",
            )
        },
    )


def _image_then_port() -> tuple[Scene, Diagnosis]:
    scene = Scene.of(hotel(), _image_and_port)
    image = Suspect(
        kind="Deployment",
        namespace="hotel-reservation",
        name="geo",
        field="spec.template.spec.containers[0].image",
        current="ghcr.io/lab/hotel/hotelreservation:1.1",
        reason="changed just before the incident",
    )
    port = Suspect(
        kind="Service",
        namespace="hotel-reservation",
        name="geo",
        field="spec.ports[0].targetPort",
        current="9999",
        reason="targetPort matches no containerPort",
    )
    diagnosis = diagnosis_of(
        ("geo", "application/code_defect", 0.6, image),
        ("geo", "virtualization/misconfiguration", 0.55, port),
    )
    return scene, diagnosis


def test_after_a_refuted_rollback_the_next_hypothesis_comes_first_and_says_why() -> None:
    scene, diagnosis = _image_then_port()
    _, before = propose(scene, "frontend", diagnosis=diagnosis)
    assert kinds(before.candidates[0]) == ["rollback"]
    assert kinds(before.candidates[1]) == ["set_image"]
    failed = attempt(
        before.candidates[0],
        OutcomeKind.ABORTED,
        mu_before=4,
        mu_after=6,
        reason="μ rose from 4 to 6",
        findings=["search: error ratio 60% (SLO 5%)", "frontend: error ratio 30% (SLO 5%)"],
    )
    _, after = propose(scene, "frontend", diagnosis=diagnosis, attempts=[failed])
    nxt = after.candidates[0]
    assert kinds(nxt) == ["patch_service"], "the Service, not the same Deployment again"
    assert nxt.hypothesis == "geo: virtualization/misconfiguration"
    assert kinds(after.candidates[1]) == ["set_image"], "the refuted object comes last"
    text = after.reflection
    assert "Attempt 1" in text and "Roll back Deployment/hotel-reservation/geo" in text
    assert "μ rose from 4 to 6" in text
    assert "search: error ratio 60%" in text
    assert "geo: application/code_defect looks wrong" in text
    assert "trying geo: virtualization/misconfiguration" in text
    assert "Service/hotel-reservation/geo" in text


def test_a_failure_that_refutes_nothing_keeps_the_hypothesis() -> None:
    scene, diagnosis = _image_then_port()
    _, before = propose(scene, "frontend", diagnosis=diagnosis)
    failed = attempt(
        before.candidates[0],
        OutcomeKind.ABORTED,
        mu_before=4,
        mu_after=None,
        reason="Δ = 600s ran out before 'Roll back Deployment/hotel-reservation/geo'",
    )
    _, after = propose(scene, "frontend", diagnosis=diagnosis, attempts=[failed])
    assert kinds(after.candidates[0]) == ["set_image"], "the same hypothesis's next fix"
    assert "does not refute geo: application/code_defect" in after.reflection


def test_a_refused_plan_makes_way_for_the_next_candidate() -> None:
    scene = Scene.of(shop(), lambda w: faults.missing_binary(w, "shipping"))
    _, before = propose(scene, "shipping", "KubePodCrashLooping")
    refused = attempt(
        before.candidates[0],
        OutcomeKind.REFUSED,
        mu_after=None,
        reason="dry run failed: no revision to roll back to",
    )
    _, after = propose(scene, "shipping", "KubePodCrashLooping", attempts=[refused])
    assert kinds(after.candidates[0]) == ["merge_patch"]
    assert "refused before any write: dry run failed" in after.reflection
    assert "Trying the next candidate instead" in after.reflection


def test_after_a_partial_fix_the_fresh_diagnosis_is_planned_for() -> None:
    def two(w: World) -> None:
        faults.target_port(w, "geo", 9999, caller="search", top="frontend")
        faults.scale_down(w, "mongodb-rate", "rate")

    scene = Scene.of(hotel(), two)
    _, before = propose(scene, "frontend")
    # Were both put back together (the first candidate, see the next test), there would be
    # nothing partial: the single fix for geo is what this test follows.
    fixed = next(c for c in before.candidates if kinds(c) == ["patch_service"])
    scene.apply(fixed.actions)
    partial = attempt(
        fixed,
        OutcomeKind.COMMITTED,
        mu_before=6,
        mu_after=3,
        reason="μ improved from 6 to 3",
        findings=["rate: error ratio 90% (SLO 5%)"],
    )
    diagnosis, after = propose(scene, "frontend", attempts=[partial])
    assert diagnosis.top.service == "mongodb-rate"
    nxt = after.candidates[0]
    assert kinds(nxt) == ["scale"]
    assert not any(kinds(c) == ["patch_service"] for c in after.candidates), "geo is fixed"
    assert "committed (μ improved from 6 to 3) but the scope is not healthy" in after.reflection
    assert "still failing: rate: error ratio 90%" in after.reflection
    assert "planning for what still fails: mongodb-rate" in after.reflection


def _two_independent(w: World) -> None:
    faults.target_port(w, "geo", 9999, caller="search", top="frontend")
    faults.scale_down(w, "mongodb-rate", "rate")


def test_independent_confident_faults_are_put_back_in_one_transaction() -> None:
    """Fixed one at a time, the first fix is judged while the other fault keeps spreading
    (μ rises, TNR undoes the right fix); together, the one validation sees both healed."""
    scene = Scene.of(hotel(), _two_independent)
    diagnosis, proposal = propose(scene, "frontend")
    confident = {h.service for h in diagnosis.hypotheses if h.confidence >= 0.8}
    assert confident == {"geo", "mongodb-rate"}
    both = proposal.candidates[0]
    assert kinds(both) == ["patch_service", "scale"]
    assert {a.target.name for a in both.actions} == {"geo", "mongodb-rate"}
    assert both.rationale.startswith("Independent faults in ")
    assert " + " in both.hypothesis
    singles = [kinds(c) for c in proposal.candidates[1:3]]
    assert ["patch_service"] in singles and ["scale"] in singles, "each alone comes next"


def test_a_refuted_combination_makes_way_for_the_single_fixes() -> None:
    scene = Scene.of(hotel(), _two_independent)
    _, before = propose(scene, "frontend")
    both = before.candidates[0]
    failed = attempt(
        both, OutcomeKind.ABORTED, mu_before=6, mu_after=9, reason="μ rose from 6 to 9"
    )
    _, after = propose(scene, "frontend", attempts=[failed])
    assert all(len(c.actions) == 1 for c in after.candidates), "never the same pair again"
    assert after.candidates, "the single fixes remain"


def test_one_confident_fault_is_not_combined_with_a_weaker_hypothesis() -> None:
    scene = Scene.of(hotel(), lambda w: faults.image_pull(w, "geo", "search"))
    diagnosis, proposal = propose(scene, "search", "KubePodNotReady")
    assert [h.confidence >= 0.8 for h in diagnosis.hypotheses].count(True) == 1
    assert not any(" + " in c.hypothesis for c in proposal.candidates)


def test_without_findings_the_services_weighing_most_are_named() -> None:
    scene = Scene.of(hotel(), lambda w: faults.image_pull(w, "geo", "search"))
    _, before = propose(scene, "search", "KubePodNotReady")
    failed = attempt(
        before.candidates[0],
        OutcomeKind.ABORTED,
        mu_before=2,
        mu_after=2,
        reason="no improvement (μ stayed at 2)",
        per_service={"search": 2.0, "geo": 0.0},
    )
    _, after = propose(scene, "search", "KubePodNotReady", attempts=[failed])
    assert "still failing: search (μ 2)" in after.reflection


def test_when_every_plan_has_been_tried_it_escalates_with_the_attempts() -> None:
    scene = Scene.of(shop(), lambda w: faults.oom(w, "recommendation"))
    _, first = propose(scene, "recommendation", "KubePodCrashLooping")
    attempts = [
        attempt(c, OutcomeKind.ABORTED, mu_before=3, mu_after=3, reason="no improvement", number=n)
        for n, c in enumerate(first.candidates, start=1)
    ]
    _, last = propose(scene, "recommendation", "KubePodCrashLooping", attempts=attempts)
    assert not last.candidates
    assert last.escalation is not None
    assert f"{len(attempts)} attempt(s)" in last.escalation.reason
    runbook = last.escalation.runbook
    for n, c in enumerate(first.candidates, start=1):
        assert f"{n}. {c.actions[0].describe()}" in runbook
    assert "no improvement" in runbook and "Undo" in runbook
    assert last.reflection.startswith("Attempt 1")


def test_reflection_is_empty_on_the_first_attempt() -> None:
    scene = Scene.of(hotel(), lambda w: faults.pod_kill(w, "profile", caller="frontend"))
    _, proposal = propose(scene, "frontend", now=NOW)
    assert proposal.reflection == ""


def test_a_refuted_plan_that_was_not_the_hypothesis_test_does_not_refute_it() -> None:
    """A scale-up under "geo's new image is bad" that did not help says nothing of the image:
    the rollback that tests the hypothesis has not run, so it comes next — not the next
    hypothesis, and not behind the object the scale-up touched. Once the rollback itself is
    refuted, the hypothesis is doubted as before."""
    from agents.actions import ScaleWorkload

    scene, diagnosis = _image_then_port()
    _, before = propose(scene, "frontend", diagnosis=diagnosis)
    rollback = before.candidates[0]
    assert kinds(rollback) == ["rollback"]
    scale_up = replace(
        rollback,
        actions=(ScaleWorkload(target=rollback.actions[0].target, replicas=2, from_replicas=1),),
    )
    wrong = attempt(
        scale_up, OutcomeKind.ABORTED, mu_before=4, mu_after=6, reason="μ rose from 4 to 6"
    )
    _, after = propose(scene, "frontend", diagnosis=diagnosis, attempts=[wrong])
    assert after.candidates[0].content_hash == rollback.content_hash
    assert "looks wrong" not in after.reflection
    assert "did not test geo: application/code_defect" in after.reflection

    tested = attempt(
        rollback, OutcomeKind.ABORTED, mu_before=4, mu_after=6, reason="μ rose from 4 to 6"
    )
    _, then = propose(scene, "frontend", diagnosis=diagnosis, attempts=[wrong, tested])
    assert kinds(then.candidates[0]) == ["patch_service"]
    assert "geo: application/code_defect looks wrong" in then.reflection
