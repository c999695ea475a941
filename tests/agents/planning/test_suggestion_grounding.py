"""A suggestion is a structured fact, not a phrase in a rationale.

`was()` decides where a value comes from (`Was.grounding`); the rule copies it onto its
`Draft`, the planner onto the `CandidatePlan`, and only `grounding` decides whether the plan
is a suggestion a person must confirm. The "not seen before" text is for people to read: a
reasoner that writes it into its own reason cannot hold a grounded plan, and a rationale
that loses it cannot free a suggestion.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from agents.actions import ScaleWorkload
from agents.diagnosis.assessment import PREFIX, Assessment
from agents.diagnosis.suspect import Suspect
from agents.model import Diagnosis, ObjectRef
from agents.planning.drafts import Draft, Tier
from agents.planning.grounding import NOT_SEEN, Grounding
from agents.planning.plan import CandidatePlan
from agents.planning.planner import _marked, _parts
from tests.agents.diagnosis.world import T0, hotel
from tests.agents.planning.scene import Scene, diagnosis_of, propose

NS = "hotel-reservation"


def _assessed(diagnosis: Diagnosis, unhealthy: tuple[str, ...]) -> Diagnosis:
    evidence = tuple(
        replace(e, source="replaced") if e.source.startswith(PREFIX) else e
        for e in diagnosis.evidence
    )
    assessment = Assessment(unhealthy=unhealthy)
    return replace(diagnosis, evidence=(*evidence, assessment.to_evidence(NS)))


def _replicas(lkg: str, reason: str) -> Diagnosis:
    suspect = Suspect(
        kind="Deployment",
        namespace=NS,
        name="search",
        field="spec.replicas",
        current="1",
        last_known_good=lkg,
        reason=reason,
    )
    found = diagnosis_of(("search", "virtualization/operation_error", 0.9, suspect))
    return _assessed(found, ("search",))


def test_a_value_only_the_reasoner_named_makes_a_reasoner_grounded_candidate() -> None:
    _, proposal = propose(Scene.of(hotel()), "search", diagnosis=_replicas("2", "named"))
    plan = proposal.candidates[0]
    assert isinstance(plan.actions[0], ScaleWorkload) and plan.actions[0].replicas == 2
    assert plan.grounding is Grounding.REASONER
    assert plan.suggestions and plan.held


def test_the_not_seen_phrase_in_a_reasoners_reason_does_not_hold_a_journal_value() -> None:
    # search ran 2 replicas until a person scaled it to 1: the journal grounds the 2, whatever
    # the reasoner writes into its reason.
    scene = Scene.of(hotel())
    body = scene.world.deployments["search"]
    body["spec"]["replicas"] = 2
    before = {"spec": dict(body["spec"])}
    scene.journal.record(
        T0 - timedelta(minutes=30), "Deployment", "search", "kubectl", {}, before, baseline=True
    )
    body["spec"]["replicas"] = 1
    scene.journal.record(
        T0 - timedelta(minutes=2),
        "Deployment",
        "search",
        "kubectl-scale",
        {"spec.replicas": (2, 1)},
        {"spec": dict(body["spec"])},
    )
    diagnosis = _replicas("2", f"the value is {NOT_SEEN}, hold it")
    _, proposal = propose(scene, "search", diagnosis=diagnosis)
    plan = proposal.candidates[0]
    assert isinstance(plan.actions[0], ScaleWorkload) and plan.actions[0].replicas == 2
    assert NOT_SEEN in plan.rationale  # the text is there ...
    assert plan.grounding.grounded  # ... and does not decide
    assert plan.suggestions == () and plan.held == ()


def test_a_suggestion_without_the_phrase_is_still_held() -> None:
    candidate = CandidatePlan(
        actions=(ScaleWorkload(target=_ref("search"), replicas=2, from_replicas=1),),
        rationale="scale search back to 2",
        hypothesis="search: virtualization/operation_error",
        grounding=Grounding.REASONER,
    )
    marked = _marked(candidate, ())
    assert NOT_SEEN not in marked.rationale
    assert marked.suggestions and any(NOT_SEEN in r for r in marked.held)


def test_every_part_of_a_split_suggestion_stays_a_suggestion() -> None:
    draft = Draft(
        tier=Tier.RESTORE,
        actions=tuple(
            ScaleWorkload(target=_ref(n), replicas=2, from_replicas=1)
            for n in ("geo", "rate", "search")
        ),
        rationale="restore and restart",
        grounding=Grounding.REASONER,
    )
    parts = _parts(draft, 1)
    assert len(parts) == 3
    assert all(p.suggestion for p in parts)


def _ref(name: str) -> ObjectRef:
    return ObjectRef(api_version="apps/v1", kind="Deployment", namespace=NS, name=name)
