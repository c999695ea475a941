"""The assessment a diagnosis carries: which services are unwell (no symptom, no write),
whether the best explanations tie (names never break a tie), and which reads failed (a blind
diagnosis says "cannot read the cluster", never "found nothing wrong")."""

from __future__ import annotations

from collections.abc import Sequence

from agents.diagnosis import Diagnoser
from agents.diagnosis.assessment import Assessment, tied_services
from agents.errors import Forbidden
from agents.model import PodState
from tests.agents.diagnosis.conftest import Run
from tests.agents.diagnosis.world import (
    FakeCluster,
    FakeJournal,
    FakeMetrics,
    FixedClock,
    alert,
    hotel,
    incident,
)


def test_a_healthy_release_just_before_a_blip_is_not_the_suspect(run: Run) -> None:
    # A brief blip on frontend, and an unrelated, healthy release of `rate` four minutes
    # earlier: a recent change alone justifies nothing.
    w = hotel()
    w.sick("frontend", errors=0.2)
    w.change(
        "Deployment",
        "rate",
        {"spec.template.spec.containers[0].image": ("hotel/rate:1", "hotel/rate:2")},
        manager="helm",
        minutes_before=4,
    )
    d = run(w, "frontend")
    assert all(h.service != "rate" for h in d.hypotheses), d.hypotheses
    assessment = Assessment.of(d)
    assert assessment is not None
    assert "frontend" in assessment.unhealthy and "rate" not in assessment.unhealthy


def test_a_change_of_an_unwell_service_is_still_the_suspect(run: Run) -> None:
    w = hotel()
    w.sick("rate", errors=0.6)
    w.change(
        "Deployment",
        "rate",
        {"spec.template.spec.containers[0].image": ("hotel/rate:1", "hotel/rate:2")},
        minutes_before=4,
    )
    d = run(w, "rate")
    assert d.top.service == "rate"


def test_stratus_own_change_is_not_a_recent_change_suspect(run: Run) -> None:
    w = hotel()
    w.sick("rate", errors=0.6)
    w.change(
        "Deployment",
        "rate",
        {"spec.replicas": (1, 2)},
        manager="stratus",
        minutes_before=4,
    )
    d = run(w, "rate")
    assert not any("changed just before the incident" in e.detail for e in d.evidence)


class BlindCluster(FakeCluster):
    """RBAC refuses every pod and workload read (an API that does not answer at all is not
    diagnosed: `test_diagnoser.test_a_diagnosis_that_cannot_see_the_pods_is_not_made`)."""

    def pods(self, namespace: str, *, label_selector: str = "") -> Sequence[PodState]:
        raise Forbidden("pods is forbidden")

    def workloads(self, namespace: str) -> Sequence[object]:  # type: ignore[override]
        raise Forbidden("deployments.apps is forbidden")


def test_a_diagnosis_whose_reads_failed_says_it_cannot_read_the_cluster() -> None:
    w = hotel()
    d = Diagnoser(
        cluster=BlindCluster(w),
        metrics=FakeMetrics(w),
        journal=FakeJournal(w),
        clock=FixedClock(),
    ).diagnose(incident(w, "frontend"), [alert(w, "HighErrorRate", "frontend")])
    assert "cannot read the cluster" in d.summary.lower()
    assert "nothing in" not in d.summary
    assessment = Assessment.of(d)
    assert assessment is not None and assessment.blind
    assert any("pods is forbidden" in u for u in assessment.unread)


def test_a_source_that_is_not_configured_is_not_a_failed_read(run: Run) -> None:
    w = hotel()
    w.sick("geo", errors=0.6)
    d = run(w, "geo", metrics=False, journal=False)
    assessment = Assessment.of(d)
    assert assessment is not None and not assessment.blind


def test_ties_are_ties_and_names_never_break_them() -> None:
    assert tied_services([("geo", 0.6), ("rate", 0.58)], margin=0.05, related=set()) == (
        "geo",
        "rate",
    )
    assert tied_services([("rate", 0.6), ("geo", 0.58)], margin=0.05, related=set()) == (
        "rate",
        "geo",
    )
    # One explains the other (depth on the call graph): not a tie.
    pair = {frozenset(("geo", "search"))}
    assert tied_services([("geo", 0.6), ("search", 0.58)], margin=0.05, related=pair) == ()
    assert tied_services([("geo", 0.9), ("rate", 0.5)], margin=0.05, related=set()) == ()
    assert tied_services([("geo", 0.6), ("geo", 0.6)], margin=0.05, related=set()) == ()


def test_two_unrelated_services_failing_alike_are_named_as_a_tie(run: Run) -> None:
    w = hotel()
    for name in ("rate", "geo"):
        w.set_pod(name, state="waiting", reason="CrashLoopBackOff", restart_count=5, ready=False)
    d = run(w, None, "KubePodCrashLooping")
    assessment = Assessment.of(d)
    assert assessment is not None
    assert set(assessment.tied) >= {"geo", "rate"}, d.hypotheses
    assert d.summary.startswith("Tie:")
    # An abstention: what is known, what is not, the top three, read-only commands.
    assert "No automatic change" in d.summary and "*Not known:* which of" in d.summary
    assert "rate shows CrashLoopBackOff" in d.summary and "geo shows CrashLoopBackOff" in d.summary
    assert f"kubectl -n {w.namespace} describe deployment/geo" in d.summary
    commands = [line for line in d.summary.splitlines() if line.startswith("• `kubectl")]
    assert commands and all(
        verb in ("describe", "logs", "rollout", "get") for verb in (c.split()[4] for c in commands)
    ), commands
    assert not any(w in c for c in commands for w in (" delete", " apply", " patch", " scale"))


def test_a_confident_diagnosis_does_not_abstain(run: Run) -> None:
    w = hotel()
    w.set_pod("geo", state="waiting", reason="CrashLoopBackOff", restart_count=5, ready=False)
    d = run(w, None, "KubePodCrashLooping")
    assert "No automatic change" not in d.summary
