"""Was it the write or the fault? The run without the agent answers for a transaction whose
boundary μ is above μ0.

The TNR rule scores "μ above μ0 at a transaction's boundary". A fault keeps spreading while a
transaction runs: a crash-looping service's callers start failing, a second fault of the
scenario lands, and μ at the boundary is above μ0 whatever the transaction did. Telling the two
apart needs a counterfactual, and the lab has an exact one: the same scenario, the same seed,
the same faults and noise at the same lab times, with the loop never stepped — nothing
detected, planned or written (`Runner.without_agent`). Both runs measure μ the same way at the
same lab second (`Runner.check_mu`: SLOs over one sustain window, the alerts that started in
it).

A μ-boundary violation is *the fault's course* only when all of these hold, and it is listed
as such in the report (never dropped):

* every transaction that started before it in the run left nothing in place (each was rolled
  back completely, or wrote nothing), so "the run without the agent" is this transaction's
  counterfactual and not that of a change an earlier transaction kept;
* the bench measured μ after its boundary in the agent's run, and at the same lab second in the
  run without the agent (an outage on either side leaves it a violation);
* μ in the agent's run is no higher than in the run without the agent.

Anything else stays a violation. The rule is the same for every agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agents.model import TransactionStatus
from lab.bench.facts import RunFacts, TransactionFacts

#: μ figures are sums of weights; anything above this is a real difference.
MU_EPSILON = 1e-6


def above_mu0(t: TransactionFacts) -> bool:
    return t.boundary_mu is not None and t.boundary_mu > t.mu0 + MU_EPSILON


def left_nothing(t: TransactionFacts) -> bool:
    """Rolled back completely, or no write at all."""
    rolled_back = t.status in (TransactionStatus.ABORTED, TransactionStatus.ESCALATED)
    return t.entries == 0 or (rolled_back and t.restored >= t.entries)


def in_question(transactions: Sequence[TransactionFacts]) -> list[TransactionFacts]:
    """The μ-boundary violations the run without the agent can settle, in start order."""
    out = []
    for index, t in enumerate(transactions):
        if not above_mu0(t) or t.check_at_s is None or t.check_mu is None:
            continue
        if all(left_nothing(earlier) for earlier in transactions[:index]):
            out.append(t)
    return out


def times_in_question(facts: RunFacts) -> tuple[float, ...]:
    """The lab seconds at which the run without the agent must measure μ (none: no need to
    run it)."""
    transactions = sorted(
        (t for i in facts.incidents for t in i.transactions), key=lambda t: t.started_s
    )
    return tuple(sorted({t.check_at_s for t in in_question(transactions) if t.check_at_s}))


def fault_course(t: TransactionFacts, without: Mapping[float, float]) -> str | None:
    """Why the transaction's μ above μ0 is the fault's course, or None when it is not shown."""
    if t.check_at_s is None or t.check_mu is None:
        return None
    alone = without.get(t.check_at_s)
    if alone is None or t.check_mu > alone + MU_EPSILON:
        return None
    return (
        f"μ {t.check_mu:g} at {t.check_at_s:g} s, {alone:g} at the same time in the run "
        "without the agent"
    )
