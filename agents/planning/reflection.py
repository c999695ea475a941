"""Reflection (STRATUS): what the earlier attempts showed, and what that changes.

Three lessons are drawn from the attempts of an incident:

* **Never twice.** A plan that ran or was refused is never proposed again — compared by its
  content hash, and by a signature that ignores a rollout restart's stamp (a restart at 10:02
  is the same plan as a restart at 10:05).
* **Doubt a refuted hypothesis.** An attempt that was rolled back because μ did not improve
  (or rose) says its hypothesis is probably wrong: that hypothesis's other plans — and any
  plan that changes the same objects again — move behind those of the next hypotheses. One
  that failed for another reason (a write, the deadline) refutes nothing: the next plan of
  the same hypothesis comes next. Nor does a plan that was not the hypothesis's test: while
  the hypothesis names a change that can be put back and that restore has not been tried,
  a failed scale-up, restart or wrong value says the *action* was wrong, not the
  hypothesis (the restore is its test, and it comes next).
* **Say why.** The proposal carries a sentence per attempt — what ran, how it ended, the
  figures and what still failed — and why the next plan differs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence, Set
from typing import Any

from agents.actions import Action, RolloutRestart, action_to_json
from agents.model import ObjectRef, OutcomeKind
from agents.planning.plan import Attempt, CandidatePlan

_DESCRIBE_LIMIT = 160


def signature(actions: Sequence[Action]) -> str:
    """A hash of what the actions do, leaving out a restart's stamp."""
    bodies = []
    for action in actions:
        body = action_to_json(action)
        if isinstance(action, RolloutRestart):
            body.pop("stamp", None)
        bodies.append(body)
    canonical = json.dumps(bodies, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def tried(attempts: Sequence[Attempt]) -> set[str]:
    """Content hashes and signatures of every plan that ran or was refused."""
    out: set[str] = set()
    for attempt in attempts:
        out.add(attempt.plan.content_hash)
        out.add(signature(attempt.plan.actions))
    return out


def refuted(attempt: Attempt) -> bool:
    """Rolled back with μ measured no better than before: the hypothesis looks wrong."""
    o = attempt.outcome
    return o.kind is OutcomeKind.ABORTED and o.mu_after is not None and o.mu_after >= o.mu_before


def doubted(attempts: Sequence[Attempt], untested: Set[str] = frozenset()) -> set[str]:
    """Hypotheses a refuted attempt rested on, but not those in `untested` (their restore
    has not been tried: a refuted plan of theirs was not their test)."""
    return {a.plan.hypothesis for a in attempts if refuted(a)} - untested


def doubted_targets(
    attempts: Sequence[Attempt], untested: Set[str] = frozenset()
) -> set[ObjectRef]:
    """Objects a refuted attempt changed: putting them back did not help, so another
    hypothesis's plan for the same object is unlikely to either. Not the objects of an
    attempt that did not test its hypothesis (see `doubted`)."""
    return {
        action.target
        for a in attempts
        if refuted(a) and a.plan.hypothesis not in untested
        for action in a.plan.actions
    }


def still_failing(validation: Mapping[str, Any], limit: int = 2) -> list[str]:
    """What the validation saw failing after the attempt: its findings, else the services
    that weighed most in μ."""
    severity = validation.get("severity")
    if not isinstance(severity, Mapping):
        return []
    findings = [str(f) for f in severity.get("findings") or [] if f]
    if findings:
        return findings[:limit]
    per_service = severity.get("per_service") or {}
    if isinstance(per_service, Mapping):
        worst = sorted(per_service.items(), key=lambda kv: (-float(kv[1] or 0), str(kv[0])))
        return [f"{name} (μ {float(score):g})" for name, score in worst[:limit] if score]
    return []


def _describe(actions: Sequence[Action]) -> str:
    text = "; ".join(a.describe() for a in actions)
    return text if len(text) <= _DESCRIBE_LIMIT else text[: _DESCRIBE_LIMIT - 1] + "…"


def ended(attempt: Attempt) -> str:
    o = attempt.outcome
    if o.kind is OutcomeKind.COMMITTED:
        text = f"committed ({o.reason})" if o.reason else "committed"
        if not o.healthy:
            text += " but the scope is not healthy yet"
    elif o.kind is OutcomeKind.ABORTED:
        text = f"was rolled back: {o.reason}" if o.reason else "was rolled back"
    elif o.kind is OutcomeKind.REFUSED:
        text = f"was refused before any write: {o.reason}"
    else:
        text = f"could not be rolled back cleanly: {o.reason}"
    failing = still_failing(attempt.validation)
    if failing:
        text += f" (still failing: {'; '.join(failing)})"
    return text


def attempt_line(number: int, attempt: Attempt) -> str:
    plan = attempt.plan
    return f"{number}. {_describe(plan.actions)} [{plan.hypothesis}] → {ended(attempt)}"


def reflect(
    attempts: Sequence[Attempt],
    chosen: CandidatePlan | None,
    untested: Set[str] = frozenset(),
) -> str:
    """One paragraph: each attempt and how it ended, then why the next plan is this one.
    `untested`: hypotheses whose restore has not been tried (see `doubted`)."""
    if not attempts:
        return ""
    sentences = [
        f"Attempt {n} ({_describe(a.plan.actions)}; {a.plan.hypothesis}) {ended(a)}."
        for n, a in enumerate(attempts, start=1)
    ]
    if chosen is None:
        return " ".join(sentences)
    last = attempts[-1]
    nxt = f"{chosen.hypothesis}: {_describe(chosen.actions)}"
    if refuted(last) and last.plan.hypothesis in untested:
        why = (
            f"That did not help, but it did not test {last.plan.hypothesis}: the change it "
            f"blames has not been put back yet; trying {nxt}."
        )
    elif refuted(last) and chosen.hypothesis != last.plan.hypothesis:
        why = f"That did not help, so {last.plan.hypothesis} looks wrong; trying {nxt} instead."
    elif refuted(last):
        why = (
            f"That did not help and no other hypothesis has an untried fix; trying the next "
            f"fix for the same one: {nxt}."
        )
    elif last.outcome.kind is OutcomeKind.ABORTED:
        why = (
            f"That failed for a reason that does not refute {last.plan.hypothesis}; trying "
            f"the next plan: {nxt}."
        )
    elif last.outcome.kind is OutcomeKind.COMMITTED:
        why = f"It helped but did not finish the job; planning for what still fails: {nxt}."
    else:
        why = f"Trying the next candidate instead: {nxt}."
    return " ".join([*sentences, why])
