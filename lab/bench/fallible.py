"""A fallible planner, the same for every agent: `--plan-noise P`.

The offline reasoner and planner are right first almost everywhere on the public suite, so a
bench that only ever hands agents the right plan cannot show what validation, undo and retries
are for. `FalliblePlanner` wraps the planner the incident machine calls (the seam
`build_brain(plan_through=...)`) and, with probability P per call, replaces the proposal's
first candidate by a plausible wrong plan, before admission, the dry run, the engine — the
agent's own machinery, whichever it has — ever see it. Every agent gets the same wrapper.

What "plausible wrong" means (documented for readers in `lab/scenarios/README.md`):

* **wrong value**: the right action with a value taken from the object's own history — a
  rollback to another revision of its rollout history, another image of that history, a
  ConfigMap key's or a replica count's other recorded value (the change journal);
* **wrong action**: another catalog action on a service of the failing path (the services the
  diagnosis names or finds unhealthy): a rollout restart, a rollback to the previous revision,
  one more replica.

A wrong plan is never one the planner itself proposed (any rank) nor one already tried, and it
keeps the replaced plan's `held` reasons (the planner's judgement of the hypothesis, not of the
action). A call with nothing to replace (an escalation, no candidate) or no wrong plan to offer
is left alone and logged as such.

Determinism: call *n* of a run (the n-th plan the agent asks for, whatever incident it is for)
draws from its own generator seeded by (seed, scenario, n), so the same seed and scenario give
the same coin flips to every agent and every run, and one call's draw never shifts another's.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from agents.actions import (
    Action,
    RollbackWorkload,
    RolloutRestart,
    ScaleWorkload,
    SetConfigMapKeys,
    SetImage,
)
from agents.diagnosis.assessment import Assessment
from agents.diagnosis.ports import JournalView
from agents.model import Diagnosis, Incident, KubeObject
from agents.planning.context import Context
from agents.planning.plan import Attempt, CandidatePlan, Planner, Proposal
from agents.planning.reflection import signature
from agents.ports import ClusterReader

logger = logging.getLogger(__name__)

#: Marks a plan the noise wrote, in its rationale (and so in the audit trail and the report).
MARK = "[plan noise]"


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanNoise:
    """How wrong the planner is: `p` per call, seeded by `seed` and the run's `scenario`."""

    p: float
    seed: int
    scenario: str

    def rng(self, call: int) -> random.Random:
        return random.Random(f"plan-noise:{self.seed}:{self.scenario}:{call}")


def wrong_values(ctx: Context, action: Action) -> list[Action]:
    """`action` with every other value the object's own history holds."""
    target = action.target
    out: list[Action] = []
    if isinstance(action, RollbackWorkload | SetImage):
        workload = ctx.workload(target.name)
        revisions = ctx.revisions(workload) if workload is not None else None
        if not revisions:
            return []
        current = revisions[-1]
        if isinstance(action, RollbackWorkload):
            chosen = action.revision or (revisions[-2].revision if len(revisions) > 1 else None)
            out += [
                RollbackWorkload(target=target, revision=r.revision)
                for r in revisions[:-1]
                if r.revision != chosen
            ]
        else:
            images = {r.images.get(action.container) for r in revisions}
            images -= {action.image, current.images.get(action.container), None}
            out += [
                SetImage(target=target, container=action.container, image=str(image))
                for image in sorted(i for i in images if i)
            ]
    elif isinstance(action, SetConfigMapKeys):
        for key, value in sorted(action.values.items()):
            seen = ctx.recorded_values("ConfigMap", target.name, f"data.{key}")
            out += [
                SetConfigMapKeys(target=target, values={**action.values, key: other})
                for other in sorted(seen - {str(value)})
            ]
    elif isinstance(action, ScaleWorkload):
        seen = ctx.recorded_values(target.kind, target.name, "spec.replicas")
        for text in sorted(seen):
            if text.isdigit() and int(text) != action.replicas:
                out.append(replace(action, replicas=int(text)))
    return out


def wrong_actions(ctx: Context, diagnosis: Diagnosis) -> list[Action]:
    """Other catalog actions on the services of the failing path."""
    assessment = Assessment.of(diagnosis)
    services = [h.service for h in diagnosis.hypotheses]
    services += list(assessment.unhealthy) if assessment is not None else []
    out: list[Action] = []
    for service in dict.fromkeys(services):
        workload = ctx.workload_for(service)
        if workload is None:
            continue
        out += _path_actions(ctx, workload)
    return out


def _path_actions(ctx: Context, workload: KubeObject) -> list[Action]:
    target = ctx.ref(workload.kind, workload.name)
    out: list[Action] = [RolloutRestart(target=target, stamp=ctx.now.isoformat())]
    revisions = ctx.revisions(workload)
    if revisions is not None and len(revisions) > 1:
        out.append(RollbackWorkload(target=target, revision=revisions[-2].revision))
    replicas = (workload.body.get("spec") or {}).get("replicas")
    if isinstance(replicas, int) and replicas >= 1:
        out.append(ScaleWorkload(target=target, replicas=replicas + 1, from_replicas=replicas))
    return out


class FalliblePlanner:
    """A `Planner` that is sometimes wrong, in the bench only. `log` says what it did per
    call, for the report."""

    def __init__(
        self,
        inner: Planner,
        noise: PlanNoise,
        *,
        reader: ClusterReader,
        journal: JournalView | None,
    ) -> None:
        self.inner = inner
        self.noise = noise
        self.reader = reader
        self.journal = journal
        self.calls = 0
        self.log: list[str] = []

    def plan(
        self,
        incident: Incident,
        diagnosis: Diagnosis,
        attempts: Sequence[Attempt],
        *,
        now: datetime,
    ) -> Proposal:
        proposal = self.inner.plan(incident, diagnosis, attempts, now=now)
        self.calls += 1
        call = self.calls
        rng = self.noise.rng(call)
        if rng.random() >= self.noise.p:
            return proposal
        if proposal.escalation is not None or not proposal.candidates:
            self.log.append(f"plan {call}: drawn wrong, but the planner escalated; left alone")
            return proposal
        ctx = Context(reader=self.reader, journal=self.journal, incident=incident, now=now)
        right = proposal.candidates[0]
        wrong = self.pick(ctx, diagnosis, proposal, attempts, rng)
        if wrong is None:
            self.log.append(f"plan {call}: drawn wrong, no wrong plan to offer; left alone")
            return proposal
        how, candidate = wrong
        line = f"plan {call}: {_text(right)} → {how}: {_text(candidate)}"
        self.log.append(line)
        logger.info("plan noise %s: %s", incident.id, line)
        return replace(proposal, candidates=(candidate, *proposal.candidates))

    def pick(
        self,
        ctx: Context,
        diagnosis: Diagnosis,
        proposal: Proposal,
        attempts: Sequence[Attempt],
        rng: random.Random,
    ) -> tuple[str, CandidatePlan] | None:
        right = proposal.candidates[0]
        excluded = {_digest(ctx, c.actions) for c in proposal.candidates}
        excluded |= {_digest(ctx, a.plan.actions) for a in attempts}
        options: list[tuple[str, tuple[Action, ...]]] = []
        for i, action in enumerate(right.actions):
            for other in wrong_values(ctx, action):
                actions = (*right.actions[:i], other, *right.actions[i + 1 :])
                options.append(("wrong value", actions))
        options += [("wrong action", (a,)) for a in wrong_actions(ctx, diagnosis)]
        seen: set[str] = set()
        unique = []
        for how, actions in options:
            digest = _digest(ctx, actions)
            if digest in excluded or digest in seen:
                continue
            seen.add(digest)
            unique.append((how, actions))
        if not unique:
            return None
        how, actions = unique[rng.randrange(len(unique))]
        return how, CandidatePlan(
            actions=actions,
            rationale=f"{MARK} {how} in place of: {right.rationale}",
            hypothesis=right.hypothesis,
            confidence=right.confidence,
            held=right.held,
        )


def _digest(ctx: Context, actions: Sequence[Action]) -> str:
    """The hash of what `actions` would do: "the previous revision" named by its number, so
    that a rollback to it and to its number are one plan, and a restart's stamp left out, so
    that a restart at another time is the same plan (as reflection's "never twice" has it)."""
    return signature(tuple(_explicit(ctx, a) for a in actions))


def _explicit(ctx: Context, action: Action) -> Action:
    if not isinstance(action, RollbackWorkload) or action.revision is not None:
        return action
    workload = ctx.workload(action.target.name)
    revisions = ctx.revisions(workload) if workload is not None else None
    if not revisions or len(revisions) < 2:
        return action
    return RollbackWorkload(target=action.target, revision=revisions[-2].revision)


def _text(candidate: CandidatePlan) -> str:
    return "; ".join(a.describe() for a in candidate.actions)
