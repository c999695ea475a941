"""Grounded values only, and no symptom, no write (DESIGN section 3 rules 9 and 10).

A reasoner's value becomes a write only when a recorded state of the same object had it or a
policy bound allows it; otherwise it is a suggestion a person confirms, marked "not seen
before in this cluster", or — outside the bounds or the namespace — it is refused and
counted. A plan changes only objects of unwell services (or config they use); ties and weak
hypotheses go to a person.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from agents.actions import ScaleWorkload, SetImage
from agents.diagnosis.assessment import PREFIX, Assessment
from agents.diagnosis.suspect import Suspect
from agents.model import Diagnosis, ObjectRef
from agents.planning import RulePlanner
from agents.planning.context import Context
from agents.planning.grounding import NOT_SEEN, refusal, registry_of
from agents.planning.plan import Proposal
from agents.policy import Bounds, build_policy
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import T0, World, hotel, shop
from tests.agents.planning.scene import NOW, Scene, diagnosis_of, propose

NS = "hotel-reservation"


def _assessed(diagnosis: Diagnosis, assessment: Assessment) -> Diagnosis:
    """The diagnosis with `assessment` instead of any it had (appended: indexes hold)."""
    evidence = tuple(
        replace(e, source="replaced") if e.source.startswith(PREFIX) else e
        for e in diagnosis.evidence
    )
    return replace(diagnosis, evidence=(*evidence, assessment.to_evidence(NS)))


def _suspect(name: str, field: str, current: str, lkg: str) -> Suspect:
    return Suspect(
        kind="Deployment",
        namespace=NS,
        name=name,
        field=field,
        current=current,
        last_known_good=lkg,
        reason="named by the model",
    )


def _written(proposal: Proposal) -> list[str]:
    return [a.describe() for c in proposal.candidates for a in c.actions]


def test_a_reasoner_replica_count_over_the_ceiling_is_refused_and_counted() -> None:
    scene = Scene.of(hotel())
    diagnosis = _assessed(
        diagnosis_of(
            (
                "search",
                "virtualization/operation_error",
                0.9,
                _suspect("search", "spec.replicas", "1", "60"),
            )
        ),
        Assessment(unhealthy=("search",)),
    )
    _, proposal = propose(scene, "search", diagnosis=diagnosis)
    assert not any("to 60" in line for line in _written(proposal))
    assert len(proposal.refused) == 1
    assert "above the policy's ceiling of 20" in proposal.refused[0]


def test_a_reasoner_replica_count_within_bounds_is_a_suggestion_held_for_a_person() -> None:
    scene = Scene.of(hotel())
    diagnosis = _assessed(
        diagnosis_of(
            (
                "search",
                "virtualization/operation_error",
                0.9,
                _suspect("search", "spec.replicas", "1", "2"),
            )
        ),
        Assessment(unhealthy=("search",)),
    )
    _, proposal = propose(scene, "search", diagnosis=diagnosis)
    plan = proposal.candidates[0]
    assert isinstance(plan.actions[0], ScaleWorkload) and plan.actions[0].replicas == 2
    assert plan.suggestions and NOT_SEEN in plan.suggestions[0]
    assert any(NOT_SEEN in reason for reason in plan.held)
    assert not proposal.refused


def test_an_image_from_an_unknown_registry_is_refused() -> None:
    scene = Scene.of(hotel())
    suspect = _suspect(
        "geo",
        "spec.template.spec.containers[0].image",
        "hotel/geo:1",
        "evil.example.com/backdoor:1",
    )
    diagnosis = _assessed(
        diagnosis_of(("geo", "application/code_defect", 0.9, suspect)),
        Assessment(unhealthy=("geo",)),
    )
    _, proposal = propose(scene, "geo", diagnosis=diagnosis)
    assert not any("evil.example.com" in line for line in _written(proposal))
    assert any("evil.example.com" in line for line in proposal.refused)


def test_an_allowlisted_registry_grounds_a_new_image_and_other_namespaces_are_refused() -> None:
    scene = Scene.of(hotel())
    ctx = Context(reader=scene.cluster, journal=None, incident=scene.incident("geo"), now=NOW)
    ref = ObjectRef(api_version="apps/v1", kind="Deployment", name="geo", namespace=NS)
    image = SetImage(target=ref, container="geo", image="registry.example.com/geo:2")
    assert refusal(ctx, image, Bounds()) is not None
    assert refusal(ctx, image, Bounds(image_registries=("registry.example.com",))) is None
    other = ObjectRef(api_version="apps/v1", kind="Deployment", name="geo", namespace="prod")
    why = refusal(ctx, ScaleWorkload(target=other, replicas=2, from_replicas=1), Bounds())
    assert why is not None and "namespace prod" in why
    assert registry_of("nginx:1.25") == "docker.io"
    assert registry_of("ghcr.io/org/app:1") == "ghcr.io"


def test_the_policy_bounds_reach_the_planner() -> None:
    scene = Scene.of(hotel())
    policy = build_policy({"namespaces": {NS: {"max_replicas": 4}}})
    diagnosis = _assessed(
        diagnosis_of(
            (
                "search",
                "virtualization/operation_error",
                0.9,
                _suspect("search", "spec.replicas", "1", "5"),
            )
        ),
        Assessment(unhealthy=("search",)),
    )
    planner = RulePlanner(scene.cluster, scene.journal, policy=policy)
    proposal = planner.plan(scene.incident("search"), diagnosis, [], now=NOW)
    assert proposal.refused and "ceiling of 4" in proposal.refused[0]


def test_no_symptom_no_write_a_healthy_service_is_never_changed() -> None:
    scene = Scene.of(hotel())
    diagnosis = _assessed(
        diagnosis_of(
            (
                "search",
                "virtualization/operation_error",
                0.9,
                _suspect("search", "spec.replicas", "1", "2"),
            )
        ),
        Assessment(unhealthy=("frontend",)),
    )
    _, proposal = propose(scene, "search", diagnosis=diagnosis)
    assert not proposal.candidates
    assert proposal.dropped and "no symptom, no write" in proposal.dropped[0]
    assert proposal.escalation is not None
    assert "dropped for want of a symptom" in proposal.escalation.reason


def test_a_tie_holds_every_plan_for_a_person() -> None:
    scene = Scene.of(hotel(), lambda w: faults.target_port(w, "geo", 9999, caller="search"))
    found = scene.diagnose("search")
    diagnosis = _assessed(found, Assessment(unhealthy=("geo", "search"), tied=("geo", "rate")))
    _, proposal = propose(scene, "search", diagnosis=diagnosis)
    assert proposal.candidates
    assert all(any("tie" in r for r in c.held) for c in proposal.candidates)


def test_the_real_diagnosis_carries_its_assessment_and_plans_are_unheld() -> None:
    scene = Scene.of(hotel(), lambda w: faults.target_port(w, "geo", 9999, caller="search"))
    diagnosis, proposal = propose(scene, "search")
    assessment = Assessment.of(diagnosis)
    assert assessment is not None and "geo" in assessment.unhealthy
    plan = proposal.candidates[0]
    assert plan.actions[0].target.name == "geo"
    assert plan.held == () and plan.suggestions == ()


def test_stratus_own_write_is_never_the_last_known_good() -> None:
    # Stratus scaled geo to 3 in an earlier incident; then someone scaled it to 0. The value
    # to put back is the one a person had chosen before Stratus's write (1), not Stratus's 3.
    scene = Scene.of(hotel())
    body = scene.world.deployments["geo"]
    body["spec"]["replicas"] = 3
    scene.journal.record(
        T0 - timedelta(minutes=30),
        "Deployment",
        "geo",
        "stratus",
        {"spec.replicas": (1, 3)},
        {"spec": dict(body["spec"])},
    )
    faults.scale_down(scene.world, "geo", caller="search")
    state = scene.state("Deployment", "geo")
    assert state is not None
    scene.journal.record(
        T0 - timedelta(minutes=1),
        "Deployment",
        "geo",
        "kubectl-scale",
        {"spec.replicas": (3, 0)},
        state,
    )
    _, proposal = propose(scene, "search", "KubeDeploymentReplicasMismatch")
    scales = [
        a
        for c in proposal.candidates
        for a in c.actions
        if isinstance(a, ScaleWorkload) and a.target.name == "geo"
    ]
    assert scales, proposal
    assert all(a.replicas != 3 for a in scales)


def test_an_autoscalers_minimum_grounds_a_replica_count_above_the_growth_factor() -> None:
    def fault(w: World) -> None:
        w.show_call_graph = False
        faults.scale_down(w, "product-catalog", "frontend")

    scene = Scene.of(shop(), fault)
    scene.hpas.append(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "product-catalog", "namespace": "online-shop"},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "product-catalog"},
                "minReplicas": 5,
                "maxReplicas": 8,
            },
        }
    )
    _, proposal = propose(scene, "frontend", journal=False)
    action = proposal.candidates[0].actions[0]
    assert isinstance(action, ScaleWorkload) and action.replicas == 5
    assert not proposal.refused
