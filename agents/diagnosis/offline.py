"""The offline reasoner: rules by principle, then dependency-graph localisation.

Every rule (the `RULES` of each rules_* module) proposes candidates for the services that look
wrong — anomalous by their own pods, Service or signals, or blamed in their callers' error
lines, or changed just before the incident. Localisation then prefers the deepest explanation:
a candidate that rests on the service's own state and sits below other anomalous services
(which it explains) outranks one that only repeats what its callees suffer. Frontend and search
fail because geo refuses connections: geo is the root cause, not frontend.

Needs no network; it is the default reasoner and the fallback when the model fails.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from agents.diagnosis import (
    rules_netapp,
    rules_pods,
    rules_scheduling,
    rules_startup,
    rules_traffic,
)
from agents.diagnosis.assessment import tied_services
from agents.diagnosis.candidate import (
    APP_AUTH,
    APP_CODE,
    APP_MISCONFIG,
    NO_FAULT,
    VIRT_MISCONFIG,
    VIRT_NETWORK,
    VIRT_OPERATION,
    Candidate,
)
from agents.diagnosis.facts import Facts
from agents.diagnosis.graph import downstream, lies_below, upstream
from agents.diagnosis.signs import Sign
from agents.model import Category

logger = logging.getLogger(__name__)

RULES = (
    *rules_pods.RULES,
    *rules_traffic.RULES,
    *rules_startup.RULES,
    *rules_scheduling.RULES,
    *rules_netapp.RULES,
)
MAX_HYPOTHESES = 5
#: Confidences closer than this are a tie: depth decides, or the diagnosis says it is unsure.
TIE = 0.05


@dataclass(frozen=True, slots=True, kw_only=True)
class Ranking:
    candidates: tuple[Candidate, ...]  # ranked, best first; never empty
    summary: str
    #: Services whose best hypotheses are tied (within `TIE`, not related by depth): the
    #: order between them is not a finding, and a person decides. Empty: no tie.
    tied: tuple[str, ...] = ()


def reason(facts: Facts) -> Ranking:
    obs = facts.obs
    found: list[Candidate] = []
    for service in sorted(_suspects(facts)):
        for rule in RULES:
            found += list(rule(facts, service))
    found += _deepest(facts, found)
    ranked = _alternatives(facts, _localise(facts, found))
    if not ranked:
        ranked = [_no_fault(facts)]
    tied = tied_services(
        ((c.service, c.confidence) for c in ranked),
        margin=TIE,
        related=_related(facts, ranked),
    )
    summary = _summary(ranked[0], tied)
    logger.info(
        "offline diagnosis of %s: %s",
        obs.scope.key,
        "; ".join(f"{c.service} {c.category} {c.confidence:.2f} [{c.rule}]" for c in ranked),
    )
    return Ranking(candidates=tuple(ranked), summary=summary, tied=tied)


def _suspects(facts: Facts) -> set[str]:
    """The services the rules look at: anomalous, alerting, blamed or just changed — and
    showing symptoms."""
    obs = facts.obs
    suspects = set(facts.anomalous) | set(obs.alerting) | set(facts.blame)
    suspects |= {t.name for t in facts.touches if t.name in obs.service_names}
    suspects &= set(facts.symptoms)
    return suspects


def _no_fault(facts: Facts) -> Candidate:
    """The answer when no rule proposes anything: nothing wrong, or nothing readable."""
    obs = facts.obs
    target = (obs.alerting or (sorted(facts.anomalous) or ["unknown"]))[0]
    blind = unread_reads(obs.gaps)
    explanation = (
        f"cannot read the cluster: {'; '.join(blind[:3])} — what could be read shows "
        "nothing wrong, which is not the same as nothing being wrong"
        if blind
        else f"nothing in {obs.scope.namespace} looks wrong: no anomalous pods, "
        "Services, signals or recent changes"
    )
    return Candidate(
        service=target,
        category=NO_FAULT,
        confidence=0.1,
        rule="no-fault",
        explanation=explanation,
        keys=tuple(facts.keys(target)),
    )


def _related(facts: Facts, ranked: list[Candidate]) -> set[frozenset[str]]:
    """Pairs of ranked services where one lies below the other: never a tie."""
    obs = facts.obs
    return {
        frozenset((a.service, b.service))
        for a in ranked
        for b in ranked
        if a.service != b.service
        and (lies_below(obs, a.service, b.service) or lies_below(obs, b.service, a.service))
    }


def _summary(top: Candidate, tied: tuple[str, ...]) -> str:
    summary = f"{top.service}: {top.category} ({top.confidence:.0%}) — {top.explanation}"
    if top.suspect is not None:
        summary += f". Suspect: {top.suspect.describe()}"
    if tied:
        summary = (
            f"Tie: {' and '.join(tied)} explain it about equally well; the order between "
            f"them is not a finding and a person should decide. {summary}"
        )
    return summary


def unread_reads(gaps: list[str]) -> list[str]:
    """The failed reads among the collector's gaps (a source not configured at all is not
    a failed read)."""
    return [g for g in gaps if not g.startswith(("no metrics source", "no change journal"))]


def _deepest(facts: Facts, found: list[Candidate]) -> list[Candidate]:
    """For anomalous services no rule explains: the bottom of the blame chain, weakly."""
    obs = facts.obs
    covered = {c.service for c in found if c.intrinsic}
    out = []
    for service in sorted(facts.anomalous):
        if service in covered:
            continue
        below = [s for s in downstream(obs, service) if s in facts.anomalous]
        if below:
            continue  # something it calls is anomalous: it is a victim, not the bottom
        out.append(_deepest_candidate(facts, service))
    return out


def _deepest_candidate(facts: Facts, service: str) -> Candidate:
    blame = facts.blame.get(service)
    timeouts = blame is not None and Sign.TIMEOUT in blame.signs()
    errors = facts.failing(service) or bool(facts.own_signs(service, previous=False))
    return Candidate(
        service=service,
        category=VIRT_NETWORK if timeouts and not errors else APP_CODE,
        confidence=0.3 if (blame or errors) else 0.2,
        explanation=f"{service} is the deepest anomalous service on the call path"
        + (f"; {', '.join(sorted(blame.by))} report failures calling it" if blame else "")
        + (" and it fails its own requests" if errors else ""),
        rule="deepest-anomalous",
        keys=(*facts.keys(service), *(blame.keys if blame else [])),
        intrinsic=False,
    )


def _localise(facts: Facts, found: list[Candidate]) -> list[Candidate]:
    intrinsic = {c.service for c in found if c.intrinsic and c.confidence >= 0.5}
    adjusted = [_by_depth(facts, c, intrinsic) for c in found]
    ranked = sorted(_merged(adjusted), key=lambda c: (-c.confidence, c.service, str(c.category)))
    ranked = _deepest_first(facts, ranked)
    ranked = _mark_tie(facts, ranked)
    return _monotone(ranked)[:MAX_HYPOTHESES]


def _by_depth(facts: Facts, c: Candidate, intrinsic: set[str]) -> Candidate:
    """A little more for each anomalous caller it explains, less when a callee below it has
    an intrinsic fault of its own."""
    obs = facts.obs
    explained = [s for s in upstream(obs, c.service) if s in facts.anomalous]
    below = [s for s in downstream(obs, c.service) if s in intrinsic and s != c.service]
    delta = 0.02 * min(len(explained), 3)
    if below and not c.intrinsic:
        delta -= 0.2  # its callee's own fault explains it
    elif below and c.confidence < 0.6:
        delta -= 0.1
    return c.boosted(delta)


def _merged(adjusted: list[Candidate]) -> list[Candidate]:
    """One candidate per service and category: the more confident, with the keys of both."""
    merged: dict[tuple[str, str], Candidate] = {}
    for c in adjusted:
        k = (c.service, str(c.category))
        have = merged.get(k)
        if have is None:
            merged[k] = c
            continue
        best, other = (c, have) if c.confidence > have.confidence else (have, c)
        merged[k] = replace(
            best,
            keys=tuple(dict.fromkeys(best.keys + other.keys)),
            suspect=best.suspect or other.suspect,
        )
    return list(merged.values())


def _mark_tie(facts: Facts, ranked: list[Candidate]) -> list[Candidate]:
    out = list(ranked)
    if len(out) > 1 and out[0].service != out[1].service:
        margin = out[0].confidence - out[1].confidence
        caller = lies_below(facts.obs, out[0].service, out[1].service)
        if margin < TIE and not caller:
            # Two unrelated services explain it about equally well: say so.
            out[0] = out[0].boosted(-TIE)
    return out


def _deepest_first(facts: Facts, ranked: list[Candidate]) -> list[Candidate]:
    """Among candidates about equally likely (within `TIE`), one that lies below another on
    the call graph ranks first, and the one above it — whose symptoms it explains — just
    below it: the deepest service whose own state explains its callers' wins (DESIGN
    section 6). Names never break a tie."""
    obs = facts.obs

    def near(a: Candidate, b: Candidate) -> bool:
        return a.service != b.service and a.confidence - b.confidence < TIE

    out = list(ranked)
    for _ in range(len(out) * len(out)):  # bounded: each swap moves a deeper one up
        moved = False
        for k in range(len(out) - 1):
            above, below = out[k], out[k + 1]
            if near(above, below) and lies_below(obs, below.service, above.service):
                out[k], out[k + 1] = below, above
                moved = True
        if not moved:
            break
    for k in range(1, len(out)):
        for deeper in out[:k]:
            if near(deeper, out[k]) and lies_below(obs, deeper.service, out[k].service):
                out[k] = out[k].boosted(min(0.0, deeper.confidence - out[k].confidence - 0.01))
    return out


def _monotone(ranked: list[Candidate]) -> list[Candidate]:
    """Confidences that agree with the ranking: none above the one ranked before it."""
    out: list[Candidate] = []
    for c in ranked:
        ceiling = out[-1].confidence if out else c.confidence
        out.append(c if c.confidence <= ceiling else replace(c, confidence=ceiling))
    return out


#: When a rule names a category, the categories most often confused with it (Acc@3 counts).
_SIBLINGS: dict[str, tuple[Category, ...]] = {
    str(VIRT_MISCONFIG): (APP_MISCONFIG, VIRT_OPERATION),
    str(VIRT_OPERATION): (VIRT_MISCONFIG, APP_CODE),
    str(APP_MISCONFIG): (APP_CODE, VIRT_MISCONFIG),
    str(APP_CODE): (APP_MISCONFIG, VIRT_OPERATION),
    str(APP_AUTH): (APP_MISCONFIG,),
    str(VIRT_NETWORK): (VIRT_MISCONFIG, APP_CODE),
}


def _alternatives(facts: Facts, ranked: list[Candidate]) -> list[Candidate]:
    """At least three hypotheses: the next services down the blame chain, then the
    categories most often confused with the top one, each well below the rule's own."""
    if not ranked:
        return ranked
    out = list(ranked)
    have = {(c.service, str(c.category)) for c in out}
    top = out[0]
    floor = min(c.confidence for c in out)

    def add(service: str, category: Category, why: str, keys: tuple[str, ...]) -> None:
        nonlocal floor
        if (service, str(category)) in have or len(out) >= MAX_HYPOTHESES:
            return
        floor = max(0.02, min(floor - 0.05, top.confidence * 0.3))
        have.add((service, str(category)))
        out.append(
            Candidate(
                service=service,
                category=category,
                confidence=round(floor, 2),
                rule="alternative",
                explanation=why,
                keys=keys,
                intrinsic=False,
            )
        )

    services = [c.service for c in out]
    others = sorted(
        (s for s in facts.anomalous if s not in services),
        key=lambda s: (-len(_blamers(facts, s)), s),
    )
    for service in others[:2]:
        add(
            service,
            top.category,
            f"{service} is anomalous too; it may be the origin",
            tuple(facts.keys(service)),
        )
    for category in _SIBLINGS.get(str(top.category), ()):
        add(
            top.service,
            category,
            f"{top.service} with the same symptoms read as {category}",
            top.keys,
        )
    return out


def _blamers(facts: Facts, service: str) -> set[str]:
    blame = facts.blame.get(service)
    return set(blame.by) if blame else set()
