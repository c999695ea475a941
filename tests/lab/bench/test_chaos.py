"""`--chaos`: outages at seeded moments, the same for every agent, and the count of commits
made on a sustain window an outage overlapped. The CI sample runs two scenarios of the public
suite whose outages cover all three kinds; `docs/benchmarks/bench-chaos.md` is the whole suite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agents.model import IncidentId, PlanId, Scope, TransactionId, TransactionStatus
from agents.tnr.records import TransactionRecord
from lab.bench import BenchConfig, load_scenario, parse_agents, run_one
from lab.bench.chaos import (
    DURATION_S,
    ChaosKind,
    OutageRecord,
    plan_outages,
    unmeasured_commits,
)
from lab.bench.results import RunResult
from lab.bench.suite import SUITE_DIR

T0 = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)


def test_the_outages_depend_on_the_seed_and_the_scenario_only() -> None:
    first = plan_outages(7, "hotel-wrong-target-port-geo", 30.0)
    assert first == plan_outages(7, "hotel-wrong-target-port-geo", 30.0)
    assert first != plan_outages(8, "hotel-wrong-target-port-geo", 30.0)
    assert len({o.kind for o in first}) == len(first) == 2
    assert first[0].at_s >= 30.0 + 10 and first[1].at_s > first[0].end_s
    assert all(DURATION_S[0] <= o.duration_s <= DURATION_S[1] for o in first)
    drawn = {o.kind for s in range(40) for o in plan_outages(s, "x", 0.0)}
    assert drawn == set(ChaosKind)


def _tx(status: TransactionStatus, ended_s: float) -> TransactionRecord:
    ended = T0 + timedelta(seconds=ended_s)
    return TransactionRecord(
        id=TransactionId(f"tx-{status.value}-{ended_s:g}"),
        scope=Scope(cluster="lab", namespace="ns"),
        status=status,
        incident_id=IncidentId("INC-1"),
        plan_id=PlanId("plan-1"),
        fencing_token=1,
        mu0=1.0,
        mu_before=1.0,
        mu_after=0.0,
        started_at=ended - timedelta(seconds=90),
        deadline_at=ended + timedelta(seconds=300),
        holder="bench",
        ended_at=ended,
    )


def test_a_commit_counts_when_an_outage_overlapped_its_sustain_window() -> None:
    outage = OutageRecord(
        kind=ChaosKind.PROMETHEUS_DOWN,
        on_at=T0 + timedelta(seconds=100),
        off_at=T0 + timedelta(seconds=130),
    )
    txs = [
        _tx(TransactionStatus.COMMITTED, 150),  # window 90–150: overlaps 100–130
        _tx(TransactionStatus.COMMITTED, 95),  # committed before the outage began
        _tx(TransactionStatus.COMMITTED, 191),  # window 131–191: measured after it
        _tx(TransactionStatus.ABORTED, 150),  # not a commit
    ]
    found = unmeasured_commits(txs, [outage], sustain_s=60)
    assert len(found) == 1 and found[0].startswith("transaction 1 committed at ")
    assert "prometheus-down" in found[0]
    still_on = OutageRecord(kind=ChaosKind.API_STALLED, on_at=T0 + timedelta(seconds=180))
    assert len(unmeasured_commits(txs, [still_on], sustain_s=60)) == 1


#: Seed 7 gives these two api-refusing + api-stalled and api-stalled + prometheus-down.
SAMPLE = ("hotel-wrong-target-port-geo", "hotel-image-not-found-user")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_stratus_never_commits_on_an_unmeasured_window() -> None:
    stratus, naive = parse_agents("stratus,naive")
    config = BenchConfig(seed=7, chaos=True)
    kinds: set[str] = set()
    first: RunResult | None = None
    for scenario in SAMPLE:
        loaded, errors = load_scenario(SUITE_DIR / f"{scenario}.yaml")
        assert loaded is not None and not errors, errors
        result = run_one(loaded, stratus, config)
        first = first or result
        assert result.error is None, result.error
        assert len(result.outages) == 2, result.outages
        kinds |= {line.split()[0] for line in result.outages}
        assert result.unmeasured_commits == (), result.unmeasured_commits
        assert result.mitigated and result.tnr_violations == 0, (result.outcome, result.plans)
    assert kinds == {k.value for k in ChaosKind} and first is not None
    # The same seed, the same run: the outages land at the same lab times, whatever the
    # stalled calls cost in wall time.
    loaded, _ = load_scenario(SUITE_DIR / f"{SAMPLE[0]}.yaml")
    assert loaded is not None
    assert run_one(loaded, stratus, config).scores() == first.scores()
    # The score can fail: the naive agent commits as soon as its write lands, with the
    # API refusal of the first scenario still inside the window its commit should rest on.
    loaded, _ = load_scenario(SUITE_DIR / f"{SAMPLE[0]}.yaml")
    assert loaded is not None
    result = run_one(loaded, naive, config)
    assert result.error is None and result.unmeasured_commits, result.outages
