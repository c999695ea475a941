"""`RulePlanner`: the mitigation planner of the STRATUS loop, by principle and without a model.

    planner = RulePlanner(reader, journal, max_actions=5)
    proposal = planner.plan(incident, diagnosis, attempts, now=clock.now())

For each hypothesis of the diagnosis, best first, the rules (`agents.planning.rules`) turn
its suspect — or, without one, the service's state and recent changes — into drafts: put the
last known good back, else a fix derived from the cluster's state, else a generic restart.
The planner ranks them (hypothesis order; a hypothesis an earlier attempt refuted goes last;
within a hypothesis restore → derived → generic), splits any draft longer than K actions,
drops every plan that already ran or was refused, and explains the choice against the earlier
attempts. Two or more confident hypotheses on different services, each resting on a change that
can be put back, are independent faults: one plan putting all of them back ranks first. It
escalates instead when the best explanation is something no catalog action fixes (the network
path, a database's users), or when every plan it can derive has been tried.

The planner only reads. Admission and the server-side dry run stay with the state machine,
which previews the candidates in this order and proposes the first admissible one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from agents.actions import Action
from agents.diagnosis.abstain import WEAK
from agents.diagnosis.assessment import Assessment
from agents.diagnosis.ports import JournalView
from agents.diagnosis.suspect import Suspect, suspects_of
from agents.model import Diagnosis, Hypothesis, Incident
from agents.planning import reflection, runbooks
from agents.planning.context import WORKLOAD_KINDS, Context
from agents.planning.drafts import Draft, Options, Tier
from agents.planning.grounding import NOT_SEEN, Grounding, Refused, refusal, symptom_gate
from agents.planning.plan import Attempt, CandidatePlan, Escalation, Proposal
from agents.planning.rules import options_for
from agents.planning.rules_state import generic_step
from agents.planning.subject import Subject
from agents.policy import Bounds, Policy
from agents.ports import ClusterReader

logger = logging.getLogger(__name__)

#: Below this confidence an unfixable top hypothesis (the network, a database's users) does
#: not stop the planner from first putting back a change another hypothesis rests on: under
#: TNR that attempt is safe, and the escalation still follows if it does not help.
CONFIDENT = 0.8


@dataclass(frozen=True, slots=True, kw_only=True)
class _Considered:
    index: int  # the hypothesis's rank in the diagnosis
    hypothesis: Hypothesis
    label: str
    options: Options


class RulePlanner:
    def __init__(
        self,
        reader: ClusterReader,
        journal: JournalView | None,
        *,
        max_actions: int = 5,
        max_candidates: int = 8,
        lookback: timedelta = timedelta(hours=2),
        policy: Policy | None = None,
    ) -> None:
        """`max_actions` is K; with a `policy`, each namespace's own K (its `max_actions`)
        applies instead."""
        if max_actions < 1:
            raise ValueError("max_actions must be ≥ 1")
        self.reader = reader
        self.journal = journal
        self.max_actions = max_actions
        self.max_candidates = max_candidates
        self.lookback = lookback
        self.policy = policy

    def k_for(self, incident: Incident) -> int:
        if self.policy is None:
            return self.max_actions
        return self.policy.for_namespace(incident.scope.namespace).limits.max_actions

    def plan(
        self,
        incident: Incident,
        diagnosis: Diagnosis,
        attempts: Sequence[Attempt],
        *,
        now: datetime,
    ) -> Proposal:
        ctx = Context(
            reader=self.reader,
            journal=self.journal,
            incident=incident,
            now=now,
            lookback=self.lookback,
        )
        considered = [
            self._consider(ctx, diagnosis, i, h) for i, h in enumerate(diagnosis.hypotheses)
        ]
        if not considered:
            return Proposal(
                escalation=Escalation(
                    reason="the diagnosis named no hypothesis", runbook=diagnosis.summary
                )
            )
        assessment = Assessment.of(diagnosis)
        refused: list[Refused] = []
        dropped: list[str] = []
        bounds = self.bounds_for(incident)
        linked = _linked(diagnosis, assessment)

        def screen(options: Options) -> Options:
            return self._screen(
                ctx,
                options,
                assessment=assessment,
                bounds=bounds,
                refused=refused,
                dropped=dropped,
                linked=linked,
            )

        considered = [replace(c, options=screen(c.options)) for c in considered]
        proposal = self._propose(ctx, incident, diagnosis, considered, attempts, screen=screen)
        _log_screened(incident, refused, dropped)
        held = _held(diagnosis, assessment)
        candidates = tuple(_marked(c, held) for c in proposal.candidates)
        escalation = proposal.escalation
        if escalation is not None and not candidates and (refused or dropped) and not attempts:
            escalation = _with_not_proposed(escalation, refused, dropped)
        return replace(
            proposal,
            candidates=candidates,
            escalation=escalation,
            refused=tuple(r.line() for r in refused),
            dropped=tuple(dropped),
        )

    def bounds_for(self, incident: Incident) -> Bounds:
        if self.policy is None:
            return Bounds()
        return self.policy.for_namespace(incident.scope.namespace).bounds

    @staticmethod
    def _screen(
        ctx: Context,
        options: Options,
        *,
        assessment: Assessment | None,
        bounds: Bounds,
        refused: list[Refused],
        dropped: list[str],
        linked: frozenset[tuple[str, str]],
    ) -> Options:
        """The drafts every action of which passes both checks (`agents.planning.grounding`):
        within the policy's bounds and the incident's namespace, and on an object a symptom
        justifies changing. A draft with one failing action goes whole: part of a fix is not
        the fix its rationale explains."""
        kept: list[Draft] = []
        for draft in options.drafts:
            why: str | None = None
            for action in draft.actions:
                if (reason := refusal(ctx, action, bounds)) is not None:
                    refused.append(Refused(action=action.describe(), reason=reason))
                    why = reason
                    break
                gate = symptom_gate(ctx, action, assessment, linked=linked)
                if (reason := gate) is not None:
                    dropped.append(f"{action.describe()}: {reason}")
                    why = reason
                    break
            if why is None:
                kept.append(draft)
        return replace(options, drafts=tuple(kept))

    def _propose(
        self,
        ctx: Context,
        incident: Incident,
        diagnosis: Diagnosis,
        considered: list[_Considered],
        attempts: Sequence[Attempt],
        *,
        screen: Callable[[Options], Options],
    ) -> Proposal:
        top = considered[0]
        if self._stops_at_top(considered):
            assert top.options.escalation is not None
            logger.info("planning %s: escalating, %s", incident.id, top.options.escalation.reason)
            return Proposal(
                escalation=top.options.escalation,
                reflection=reflection.reflect(attempts, None),
            )
        candidates = self._ranked(considered, attempts, k=self.k_for(incident))
        generic = self._generic_for_top(ctx, top) if not candidates else None
        if generic is not None:
            generic = replace(generic, options=screen(generic.options))
        if generic is not None and generic.options.drafts:
            # Before giving up on the best explanation (or escalating on another's runbook),
            # the low-risk step for it: under TNR it is validated and undone if it does not help.
            considered = [generic, *considered[1:]]
            candidates = self._ranked(considered, attempts, k=self.k_for(incident))
        if not candidates:
            escalation = self._nothing_left(ctx, diagnosis, considered, attempts)
            logger.info("planning %s: escalating, %s", incident.id, escalation.reason)
            return Proposal(escalation=escalation, reflection=reflection.reflect(attempts, None))
        logger.info(
            "planning %s: %d candidate(s), first %s [%s]",
            incident.id,
            len(candidates),
            candidates[0].content_hash[:12],
            candidates[0].hypothesis,
        )
        untested = _restore_untried(considered, reflection.tried(attempts), self.k_for(incident))
        return Proposal(
            candidates=tuple(candidates),
            reflection=reflection.reflect(attempts, candidates[0], untested),
        )

    # ------------------------------------------------------------------------ steps

    def _consider(
        self, ctx: Context, diagnosis: Diagnosis, index: int, hypothesis: Hypothesis
    ) -> _Considered:
        evidence = tuple(
            diagnosis.evidence[i] for i in hypothesis.evidence if 0 <= i < len(diagnosis.evidence)
        )
        suspects: list[Suspect | None] = [*suspects_of(diagnosis, hypothesis)] or [None]
        options = Options()
        for suspect in suspects:
            subject = Subject(hypothesis=hypothesis, suspect=suspect, evidence=evidence)
            options += options_for(ctx, subject)
        label = f"{hypothesis.service}: {hypothesis.category}"
        return _Considered(index=index, hypothesis=hypothesis, label=label, options=options)

    @staticmethod
    def _generic_for_top(ctx: Context, top: _Considered) -> _Considered | None:
        """The top hypothesis with the generic step drafted, when it has neither a plan nor
        an escalation of its own (then nothing it could name was found to restore)."""
        if top.options.drafts or top.options.escalation is not None:
            return None
        workload = ctx.workload_for(top.hypothesis.service)
        if workload is None:
            return None
        options = generic_step(ctx, Subject(hypothesis=top.hypothesis, suspect=None), workload)
        if not options.drafts:
            return None
        return replace(top, options=options)

    @staticmethod
    def _stops_at_top(considered: list[_Considered]) -> bool:
        """The best explanation is one no catalog action fixes. One the diagnosis is not sure
        of does not stop a restore that another hypothesis rests on."""
        top = considered[0]
        if top.options.escalation is None or top.options.drafts:
            return False
        if top.hypothesis.confidence >= CONFIDENT:
            return True
        return not any(d.tier is Tier.RESTORE for c in considered[1:] for d in c.options.drafts)

    def _ranked(
        self, considered: list[_Considered], attempts: Sequence[Attempt], *, k: int
    ) -> list[CandidatePlan]:
        """Hypothesis order, restore → derived → generic within one — except that a generic
        restart for an alternative hypothesis waits until every specific fix has had its
        turn — and whatever a refuted attempt points at (its hypothesis, the objects it
        changed) last."""
        seen = reflection.tried(attempts)
        untested = _restore_untried(considered, seen, k)
        doubted = reflection.doubted(attempts, untested)
        touched = reflection.doubted_targets(attempts, untested)
        ranked: list[tuple[bool, bool, int, int, int, CandidatePlan]] = []
        if (together := _together(considered, k)) is not None:
            doubt = any(a.target in touched for a in together.actions)
            ranked.append((doubt, False, -1, Tier.RESTORE, -1, together))
        for c in considered:
            for draft in c.options.drafts:
                for part in _parts(draft, k):
                    plan = CandidatePlan(
                        actions=part.actions,
                        rationale=part.rationale,
                        hypothesis=c.label,
                        confidence=round(c.hypothesis.confidence * draft.tier.weight, 2),
                        grounding=part.grounding,
                    )
                    doubt = c.label in doubted or any(a.target in touched for a in part.actions)
                    last_resort = draft.tier is Tier.GENERIC and c.index > 0
                    ranked.append((doubt, last_resort, c.index, draft.tier, len(ranked), plan))
        out: list[CandidatePlan] = []
        for *_, plan in sorted(ranked, key=lambda r: r[:5]):
            key = reflection.signature(plan.actions)
            if plan.content_hash in seen or key in seen:
                continue
            seen |= {plan.content_hash, key}
            out.append(plan)
        return out[: self.max_candidates]

    @staticmethod
    def _nothing_left(
        ctx: Context,
        diagnosis: Diagnosis,
        considered: list[_Considered],
        attempts: Sequence[Attempt],
    ) -> Escalation:
        if attempts:
            lines = [reflection.attempt_line(n, a) for n, a in enumerate(attempts, start=1)]
            exhausted = runbooks.exhausted(ctx, diagnosis, attempts, lines)
            unfixable = considered[0].options.escalation
            if unfixable is None:
                return exhausted
            # The best explanation was one no plan can fix, and the plans for the others did
            # not help: its runbook first, then what was tried.
            return Escalation(
                reason=f"{unfixable.reason}; {exhausted.reason}",
                runbook=f"{unfixable.runbook}\n\n{exhausted.runbook}",
            )
        own = considered[0].options.escalation
        if own is not None:
            return own
        # The best explanation has nothing to fix and no runbook of its own. Another
        # hypothesis's runbook is not the diagnosis: it goes below, as what it would need.
        top = considered[0].hypothesis
        others = [c for c in considered[1:] if c.options.escalation is not None]
        lines = [
            f"The diagnosis: {diagnosis.summary}",
            "Stratus found no object it could put back and no fix it could derive "
            "from the cluster's state for any hypothesis:",
            *(
                f"- {c.label} ({c.hypothesis.confidence:.0%}): {c.hypothesis.explanation}"
                for c in considered
            ),
            "A person should check the suspect objects against their source of truth.",
        ]
        if others:
            first = others[0]
            assert first.options.escalation is not None
            lines += [
                "",
                f"If it is rather {first.label} ({first.hypothesis.confidence:.0%}): "
                f"{first.options.escalation.reason}.",
                first.options.escalation.runbook,
            ]
        return Escalation(
            reason=f"no action in the catalog fits {top.service}: {top.category}",
            runbook="\n".join(lines),
        )


def _linked(diagnosis: Diagnosis, assessment: Assessment | None) -> frozenset[tuple[str, str]]:
    """The suspects (kind, name) of the hypotheses about unwell services that are not
    workloads: config, quota and policy objects the symptom gate lets change for them."""
    unwell = set(assessment.unhealthy) if assessment is not None else set()
    return frozenset(
        (s.kind, s.name)
        for h in diagnosis.hypotheses
        if h.service in unwell
        for s in suspects_of(diagnosis, h)
        if s.kind not in WORKLOAD_KINDS  # a workload must be unwell itself
    )


def _log_screened(incident: Incident, refused: list[Refused], dropped: list[str]) -> None:
    for r in refused:
        logger.warning("planning %s: refused attempt: %s", incident.id, r.line())
    for d in dropped:
        logger.info("planning %s: dropped (no symptom, no write): %s", incident.id, d)


def _with_not_proposed(
    escalation: Escalation, refused: list[Refused], dropped: list[str]
) -> Escalation:
    """The escalation with what the screen took out listed below its runbook."""
    return Escalation(
        reason=f"{escalation.reason}; {len(refused)} proposed change(s) refused and "
        f"{len(dropped)} dropped for want of a symptom",
        runbook="\n".join(
            [
                escalation.runbook,
                "",
                "Not proposed (a person may still act, after checking):",
                *(f"- {r.line()}" for r in refused),
                *(f"- {d}" for d in dropped),
            ]
        ),
    )


def _held(diagnosis: Diagnosis, assessment: Assessment | None) -> tuple[str, ...]:
    """Why no plan for this diagnosis may run without a person, whatever the autonomy."""
    out: list[str] = []
    if assessment is not None and assessment.tied:
        out.append(
            f"tie: {' and '.join(assessment.tied)} explain the incident about equally well; "
            "a person decides between them"
        )
    if diagnosis.top.confidence < WEAK:
        out.append(
            f"the best hypothesis is weak ({diagnosis.top.confidence:.0%}): Stratus abstains "
            "from automatic changes"
        )
    if assessment is not None and assessment.blind:
        out.append("the diagnosis could not read all of the cluster; its evidence is incomplete")
    return tuple(out)


def _marked(candidate: CandidatePlan, held: tuple[str, ...]) -> CandidatePlan:
    """The candidate with its suggestions (values only a reasoner named) and the reasons it
    must wait for a person."""
    suggestions: tuple[str, ...] = ()
    if not candidate.grounding.grounded:
        suggestions = tuple(
            f"{a.describe()}: the value is {NOT_SEEN} (only a reasoner named it)"
            for a in candidate.actions
        )
    reasons = list(held)
    if suggestions:
        reasons.append(f"it writes a value {NOT_SEEN}: a person must confirm it")
    return replace(candidate, suggestions=suggestions, held=tuple(reasons))


def _restore_untried(considered: list[_Considered], seen: set[str], k: int) -> set[str]:
    """Hypotheses with a restore (put back the change they blame) none of which has been
    tried: nothing has tested them yet, whatever else was tried under their name."""
    untested = set()
    for c in considered:
        restores = [
            reflection.signature(part.actions)
            for draft in c.options.drafts
            if draft.tier is Tier.RESTORE
            for part in _parts(draft, k)
        ]
        if restores and not any(r in seen for r in restores):
            untested.add(c.label)
    return untested


def _together(considered: list[_Considered], k: int) -> CandidatePlan | None:
    """Independent faults at once: two or more confident hypotheses on different services,
    each resting on a change that can be put back. Fixed one at a time, the first transaction
    is judged while the other fault keeps spreading through shared callers, so μ rises and TNR
    rightly cannot tell that from harm: the right fix is undone. Put back every such change in
    one transaction instead — still validated, and undone as one if it does not help."""
    chosen = _restores(considered)
    actions = tuple(a for _, d in chosen for a in d.actions)
    targets = {a.target for a in actions}
    if len(chosen) < 2 or len(actions) > k or len(targets) < len(actions):
        return None
    return _in_one_transaction(chosen, actions)


def _restores(considered: list[_Considered]) -> list[tuple[_Considered, Draft]]:
    """The first restore of each confident hypothesis, one per service (the best first)."""
    chosen: list[tuple[_Considered, Draft]] = []
    for c in considered:
        if c.hypothesis.confidence < CONFIDENT:
            continue
        if any(c.hypothesis.service == other.hypothesis.service for other, _ in chosen):
            continue
        restore = next((d for d in c.options.drafts if d.tier is Tier.RESTORE), None)
        if restore is not None:
            chosen.append((c, restore))
    return chosen


def _in_one_transaction(
    chosen: list[tuple[_Considered, Draft]], actions: tuple[Action, ...]
) -> CandidatePlan:
    return CandidatePlan(
        actions=actions,
        rationale=" ".join(
            [
                "Independent faults in "
                + " and ".join(c.hypothesis.service for c, _ in chosen)
                + ": each change is put back, in one transaction.",
                *(f"{c.hypothesis.service}: {d.rationale}" for c, d in chosen),
            ]
        ),
        hypothesis=" + ".join(c.label for c, _ in chosen),
        confidence=round(min(c.hypothesis.confidence for c, _ in chosen), 2),
        grounding=next((d.grounding for _, d in chosen if d.suggestion), Grounding.SNAPSHOT),
    )


def _parts(draft: Draft, k: int) -> list[Draft]:
    """A draft of at most K actions, or its split into parts that each are."""
    if len(draft.actions) <= k:
        return [draft]
    chunks = [draft.actions[i : i + k] for i in range(0, len(draft.actions), k)]
    total = len(chunks)
    return [
        replace(
            draft,
            actions=chunk,
            rationale=f"{draft.rationale} (part {n} of {total}: at most {k} actions per "
            "transaction)",
        )
        for n, chunk in enumerate(chunks, start=1)
    ]
