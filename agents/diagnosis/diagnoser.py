"""The diagnoser: handler → evidence → similar incidents → budget → reasoner → `Diagnosis`.

Pure values out: no Slack, no storage writes (the state machine persists the result). The
offline verdict is always computed — it ranks the evidence for the budget, it is the Claude
reasoner's pre-analysis, and it is the answer whenever the model is not configured or fails
(the diagnosis then says why, in `fallback_reason`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agents.diagnosis import offline
from agents.diagnosis.abstain import abstains, abstention
from agents.diagnosis.answer import FinalAnswer, HypothesisAnswer
from agents.diagnosis.assessment import Assessment, tied_services
from agents.diagnosis.budget import TokenEstimator, bundle_tokens, estimate_tokens, fit
from agents.diagnosis.candidate import Candidate
from agents.diagnosis.claude import ClaudeReasoner, ClaudeSettings, Tally
from agents.diagnosis.collect import Collector
from agents.diagnosis.facts import Facts
from agents.diagnosis.graph import lies_below
from agents.diagnosis.handlers import HandlerSet, load_handlers
from agents.diagnosis.items import Item, clip
from agents.diagnosis.kreason import kube_reason
from agents.diagnosis.llm import LanguageModel
from agents.diagnosis.observe import Observations
from agents.diagnosis.ports import JournalView, Redactor, SimilarSearch
from agents.diagnosis.suspect import Suspect
from agents.diagnosis.tools import Toolbox
from agents.errors import BudgetExceeded, ModelUnavailable, SourcesUnavailable, StratusError
from agents.model import (
    Alert,
    Category,
    Diagnosis,
    Evidence,
    Hypothesis,
    Incident,
    SimilarIncident,
)
from agents.ports import Clock, ClusterReader, MetricsSource
from agents.redact import redact_text as basic_redact

logger = logging.getLogger(__name__)

#: Tokens kept free in the evidence budget for suspects a reasoner adds after budgeting.
_SUSPECT_RESERVE = 400


@dataclass(frozen=True, slots=True, kw_only=True)
class _Ranked:
    items: list[Item]
    index: dict[str, int]


class Diagnoser:
    def __init__(
        self,
        *,
        cluster: ClusterReader,
        clock: Clock,
        metrics: MetricsSource | None = None,
        journal: JournalView | None = None,
        similar: SimilarSearch | None = None,
        redactor: Redactor = basic_redact,
        handlers: HandlerSet | None = None,
        evidence_token_budget: int = 24_000,
        estimator: TokenEstimator = estimate_tokens,
        model: LanguageModel | None = None,
        claude: ClaudeSettings | None = None,
    ) -> None:
        self.cluster = cluster
        self.metrics = metrics
        self.journal = journal
        self.similar = similar
        self.redactor = redactor
        self.clock = clock
        self.handlers = handlers or load_handlers()
        self.budget = evidence_token_budget
        self.estimator = estimator
        self.reasoner = (
            ClaudeReasoner(model, claude or ClaudeSettings(), redactor)
            if model is not None
            else None
        )
        self.collector = Collector(
            cluster=cluster, metrics=metrics, journal=journal, redactor=redactor, clock=clock
        )

    def diagnose(self, incident: Incident, alerts: Sequence[Alert]) -> Diagnosis:
        handler = self.handlers.select(alerts)
        logger.info("diagnosing %s with handler %s", incident.id, handler.name)
        obs, items = self.collector.collect(incident, alerts, handler)
        if obs.unavailable:
            # A diagnosis of a cluster we could not see would name whatever answered; an
            # outage is not a finding (DESIGN rule 8). The machine waits and asks again.
            raise SourcesUnavailable("; ".join(obs.unavailable[:3]))
        facts = Facts(obs, handler)
        verdict = offline.reason(facts)
        unhealthy = sorted(set(facts.anomalous) | set(obs.alerting))
        items += self._suspect_items(verdict.candidates)
        cited = [k for c in verdict.candidates[:3] for k in self._keys(c)]
        kept, _ = fit(
            items,
            max(0, self.budget - _SUSPECT_RESERVE),
            cited=cited,
            focus=[c.service for c in verdict.candidates[:2]],
            estimate=self.estimator,
        )
        ranked = _Ranked(items=kept, index={it.key: i for i, it in enumerate(kept)})
        similar = self._similar(incident, verdict.summary, kept)
        evidence = [it.evidence for it in kept]
        if self.reasoner is not None:
            tally = Tally()
            try:
                answer = self.reasoner.reason(
                    incident=incident,
                    alerts=alerts,
                    evidence=evidence,
                    hints=verdict,
                    similar=similar,
                    toolbox=Toolbox(
                        cluster=self.cluster,
                        metrics=self.metrics,
                        journal=self.journal,
                        redactor=self.redactor,
                        obs=obs,
                    ),
                    tally=tally,
                )
            except (BudgetExceeded, ModelUnavailable) as e:
                reason = f"{type(e).__name__}: {e}"
                logger.warning(
                    "claude reasoner fell back to offline for %s: %s", incident.id, reason
                )
                return self._assessed(
                    self._offline(
                        incident, verdict, ranked, similar, tokens=tally.tokens, fallback=reason
                    ),
                    unhealthy,
                    obs.gaps,
                    verdict.tied,
                    facts,
                )
            return self._assessed(
                self._claude(incident, answer, evidence, similar, tally.tokens),
                unhealthy,
                obs.gaps,
                None,
                facts,
            )
        return self._assessed(
            self._offline(incident, verdict, ranked, similar, tokens=0, fallback=None),
            unhealthy,
            obs.gaps,
            verdict.tied,
            facts,
        )

    def _assessed(
        self,
        diagnosis: Diagnosis,
        unhealthy: list[str],
        gaps: list[str],
        tied: tuple[str, ...] | None,
        facts: Facts,
    ) -> Diagnosis:
        """The diagnosis with its assessment appended (what is unwell, ties, failed reads),
        and a summary that says so when the cluster could not be read."""
        obs = facts.obs
        if tied is None:  # another reasoner's ranking: a tie is a tie whoever ranked it
            tied = _ties(diagnosis, obs)
        assessment = Assessment(
            unhealthy=tuple(unhealthy),
            tied=tied,
            unread=tuple(clip(self.redactor(g), 120) for g in gaps[:5]),
        )
        evidence = assessment.to_evidence(obs.scope.namespace)
        summary = diagnosis.summary
        if assessment.blind and "cannot read the cluster" not in summary:
            summary = (
                f"Cannot read the cluster ({len(gaps)} read(s) failed); the evidence is "
                f"incomplete. {summary}"
            )
        if tied and not summary.startswith("Tie:"):
            summary = f"Tie: {' and '.join(tied)} explain it about equally well. {summary}"
        bundle = (*diagnosis.evidence, evidence)
        diagnosis = replace(
            diagnosis,
            hypotheses=tuple(
                replace(h, reason=kube_reason(facts, h.service)) for h in diagnosis.hypotheses
            ),
            evidence=bundle,
        )
        if abstains(diagnosis, tied):
            summary += "\n\n" + self.redactor(
                abstention(diagnosis, namespace=obs.scope.namespace, tied=tied, unhealthy=unhealthy)
            )
        return replace(
            diagnosis,
            summary=summary,
            evidence_tokens=bundle_tokens(bundle, self.estimator),
        )

    # ------------------------------------------------------------------------ pieces

    @staticmethod
    def _keys(c: Candidate) -> list[str]:
        return ([f"suspect:{id(c.suspect)}"] if c.suspect else []) + list(c.keys)

    def _suspect_items(self, candidates: Sequence[Candidate]) -> list[Item]:
        out = []
        for c in candidates:
            if c.suspect is None:
                continue
            ev = c.suspect.to_evidence(service=c.service)
            out.append(
                Item(
                    key=f"suspect:{id(c.suspect)}",
                    evidence=Evidence(
                        kind=ev.kind,
                        source=self.redactor(ev.source),
                        summary=clip(self.redactor(ev.summary), 240),
                        service=ev.service,
                        detail=self.redactor(ev.detail),
                    ),
                    relevance=1.0,
                )
            )
        return out

    def _similar(self, incident: Incident, summary: str, kept: list[Item]) -> list[SimilarIncident]:
        if self.similar is None:
            return []
        text = self.redactor(
            " ".join([incident.title, summary, *(it.evidence.summary for it in kept[:5])])
        )
        try:
            return list(self.similar.search(text, exclude=incident.id, limit=3))
        except StratusError as e:
            logger.info("similar-incident search failed for %s: %s", incident.id, e)
            return []

    def _offline(
        self,
        incident: Incident,
        verdict: offline.Ranking,
        ranked: _Ranked,
        similar: list[SimilarIncident],
        *,
        tokens: int,
        fallback: str | None,
    ) -> Diagnosis:
        hypotheses = []
        for c in verdict.candidates:
            indices = tuple(
                dict.fromkeys(ranked.index[k] for k in self._keys(c) if k in ranked.index)
            )
            text = c.explanation + (f". Suspect: {c.suspect.describe()}" if c.suspect else "")
            hypotheses.append(
                Hypothesis(
                    service=c.service,
                    category=c.category,
                    confidence=round(c.confidence, 2),
                    explanation=self.redactor(text),
                    evidence=indices,
                )
            )
        evidence = tuple(it.evidence for it in ranked.items)
        return Diagnosis(
            incident_id=incident.id,
            hypotheses=tuple(hypotheses),
            evidence=evidence,
            reasoner="offline",
            summary=self.redactor(verdict.summary),
            tokens=tokens,
            fallback_reason=fallback,
            similar=tuple(similar),
            evidence_tokens=bundle_tokens(evidence, self.estimator),
            created_at=self.clock.now(),
        )

    def _claude(
        self,
        incident: Incident,
        answer: FinalAnswer,
        evidence: list[Evidence],
        similar: list[SimilarIncident],
        tokens: int,
    ) -> Diagnosis:
        evidence = list(evidence)
        hypotheses = []
        for h in answer.hypotheses:
            indices = list(dict.fromkeys(h.evidence))
            suspect = _suspect(h, incident.scope.namespace)
            text = h.explanation
            if suspect is not None:
                ev = suspect.to_evidence(service=h.service)
                evidence.append(
                    Evidence(
                        kind=ev.kind,
                        source=self.redactor(ev.source),
                        summary=clip(self.redactor(ev.summary), 240),
                        service=ev.service,
                        detail=self.redactor(ev.detail),
                    )
                )
                indices.insert(0, len(evidence) - 1)
                text += f". Suspect: {suspect.describe()}"
            hypotheses.append(
                Hypothesis(
                    service=h.service,
                    category=Category.parse(h.category),
                    confidence=round(h.confidence, 2),
                    explanation=self.redactor(text),
                    evidence=tuple(indices),
                )
            )
        return Diagnosis(
            incident_id=incident.id,
            hypotheses=tuple(hypotheses),
            evidence=tuple(evidence),
            reasoner=f"claude:{self.reasoner.model.name}" if self.reasoner else "claude",
            summary=self.redactor(answer.summary),
            tokens=tokens,
            similar=tuple(similar),
            evidence_tokens=bundle_tokens(evidence, self.estimator),
            created_at=self.clock.now(),
        )


def _suspect(h: HypothesisAnswer, namespace: str) -> Suspect | None:
    s = h.suspect
    if s is None:
        return None
    cluster_scoped = s.kind in ("Node", "Namespace", "PersistentVolume")
    return Suspect(
        kind=s.kind,
        namespace=None if cluster_scoped else namespace,
        name=s.name,
        field=s.field,
        current=s.current,
        last_known_good=s.last_known_good,
        reason="named by the model",
    )


def _ties(diagnosis: Diagnosis, obs: Observations) -> tuple[str, ...]:
    """Services the hypotheses rank about equally, unless one lies below the other on the
    failing path (then the ranking between them is the path's, not a tie)."""
    services = {h.service for h in diagnosis.hypotheses}
    return tied_services(
        ((h.service, h.confidence) for h in diagnosis.hypotheses),
        margin=offline.TIE,
        related={
            frozenset((a, b))
            for a in services
            for b in services
            if a != b and (lies_below(obs, a, b) or lies_below(obs, b, a))
        },
    )


__all__ = ["Diagnoser", "Observations"]
