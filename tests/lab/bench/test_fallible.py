"""The fallible planner: deterministic per seed, scenario and call; wrong but plausible plans
(never one the planner itself proposed, never one already tried); nothing replaced at P = 0."""

from __future__ import annotations

from agents.actions import RollbackWorkload, RolloutRestart, ScaleWorkload, actions_hash
from agents.model import OutcomeKind
from agents.planning import RulePlanner
from lab.bench.fallible import MARK, FalliblePlanner, PlanNoise
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import hotel
from tests.agents.planning.scene import NOW, Scene, attempt


def _scene() -> Scene:
    return Scene.of(hotel(), lambda w: faults.bad_build(w, "rate", caller="search"))


def _noisy(scene: Scene, p: float, *, seed: int = 7, scenario: str = "sc") -> FalliblePlanner:
    inner = RulePlanner(scene.cluster, scene.journal)
    return FalliblePlanner(
        inner,
        PlanNoise(p=p, seed=seed, scenario=scenario),
        reader=scene.cluster,
        journal=scene.journal,
    )


def _first(planner: FalliblePlanner, scene: Scene) -> tuple[str, ...]:
    diagnosis = scene.diagnose("search")
    proposal = planner.plan(scene.incident("search"), diagnosis, [], now=NOW)
    return tuple(a.describe() for a in proposal.candidates[0].actions)


def test_no_noise_leaves_the_plan_alone() -> None:
    scene = _scene()
    diagnosis = scene.diagnose("search")
    right = RulePlanner(scene.cluster, scene.journal).plan(
        scene.incident("search"), diagnosis, [], now=NOW
    )
    noisy = _noisy(scene, 0.0)
    proposal = noisy.plan(scene.incident("search"), diagnosis, [], now=NOW)
    assert proposal == right
    assert noisy.log == []


def test_a_wrong_plan_is_plausible_and_not_the_planners_own() -> None:
    scene = _scene()
    diagnosis = scene.diagnose("search")
    right = RulePlanner(scene.cluster, scene.journal).plan(
        scene.incident("search"), diagnosis, [], now=NOW
    )
    own = {c.content_hash for c in right.candidates}
    path = {h.service for h in diagnosis.hypotheses}
    for seed in range(12):
        noisy = _noisy(scene, 1.0, seed=seed)
        proposal = noisy.plan(scene.incident("search"), diagnosis, [], now=NOW)
        wrong = proposal.candidates[0]
        assert MARK in wrong.rationale
        assert wrong.content_hash not in own
        # The right plans stay behind it, in their order: admission may still refuse it.
        assert proposal.candidates[1:] == right.candidates
        assert wrong.held == right.candidates[0].held
        for action in wrong.actions:
            # A catalog action on a workload of the failing path, with a value from history.
            assert isinstance(action, RollbackWorkload | RolloutRestart | ScaleWorkload)
            assert action.target.name in path
            if isinstance(action, RollbackWorkload):
                assert action.revision is not None
        assert len(noisy.log) == 1 and "→" in noisy.log[0]


def test_a_rollback_to_the_previous_revision_by_its_number_is_not_wrong() -> None:
    scene = _scene()
    diagnosis = scene.diagnose("search")
    right = RulePlanner(scene.cluster, scene.journal).plan(
        scene.incident("search"), diagnosis, [], now=NOW
    )
    assert any(isinstance(a, RollbackWorkload) for a in right.candidates[0].actions)
    for seed in range(12):
        wrong = (
            _noisy(scene, 1.0, seed=seed)
            .plan(scene.incident("search"), diagnosis, [], now=NOW)
            .candidates[0]
        )
        for action in wrong.actions:
            if isinstance(action, RollbackWorkload) and action.target.name == "rate":
                assert action.revision != 1  # rate's previous revision: the right fix


def test_same_seed_same_noise_other_seed_other_noise() -> None:
    scene = _scene()
    runs = {seed: [_first(_noisy(scene, 0.5, seed=seed), scene)] for seed in range(8)}
    again = {seed: [_first(_noisy(scene, 0.5, seed=seed), scene)] for seed in range(8)}
    assert runs == again
    assert len({tuple(v) for v in runs.values()}) > 1


def test_each_call_draws_on_its_own() -> None:
    """Call n's draw depends on (seed, scenario, n) only: what an earlier call drew does not
    shift it, so every agent gets the same coin for its n-th plan."""
    noise = PlanNoise(p=0.4, seed=7, scenario="sc")
    first = [noise.rng(n).random() for n in range(1, 6)]
    assert first == [noise.rng(n).random() for n in range(1, 6)]
    other = PlanNoise(p=0.4, seed=7, scenario="other")
    assert first != [other.rng(n).random() for n in range(1, 6)]


def test_a_tried_plan_is_never_offered_again() -> None:
    scene = _scene()
    diagnosis = scene.diagnose("search")
    noisy = _noisy(scene, 1.0)
    wrong = noisy.plan(scene.incident("search"), diagnosis, [], now=NOW).candidates[0]
    tried = [attempt(wrong, OutcomeKind.ABORTED)]
    for _ in range(6):
        again = noisy.plan(scene.incident("search"), diagnosis, tried, now=NOW)
        assert actions_hash(again.candidates[0].actions) != wrong.content_hash


def test_a_restart_tried_at_another_time_is_never_offered_again() -> None:
    """A restart's stamp is the time it was made: the same restart later is the same plan
    (reflection's "never twice"), so the noise does not offer it again either."""
    from dataclasses import replace

    from agents.planning.reflection import signature

    scene = _scene()
    diagnosis = scene.diagnose("search")
    noisy = _noisy(scene, 1.0)
    restarts = []
    for seed in range(40):
        noisy = _noisy(scene, 1.0, seed=seed)
        wrong = noisy.plan(scene.incident("search"), diagnosis, [], now=NOW).candidates[0]
        if [a.kind for a in wrong.actions] == ["rollout_restart"]:
            restarts.append((seed, wrong))
    assert restarts, "some seed draws a restart"
    seed, wrong = restarts[0]
    earlier = replace(
        wrong,
        actions=tuple(replace(a, stamp="2026-01-05T08:00:00+00:00") for a in wrong.actions),
    )
    tried = [attempt(earlier, OutcomeKind.ABORTED)]
    for _ in range(6):
        again = _noisy(scene, 1.0, seed=seed).plan(
            scene.incident("search"), diagnosis, tried, now=NOW
        )
        assert signature(again.candidates[0].actions) != signature(wrong.actions)
