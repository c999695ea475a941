"""A public scenario whose first-ranked plan does not restore health, with nothing forced:
mongodb-geo's CPU limit is cut to what it needs while idle, then geo's Service gets a wrong
targetPort. Nobody reaches geo, so nobody queries its database and the first fault is masked.
Putting geo's port back (the right fix for what the evidence shows) sends traffic into the
throttled database: μ rises during validation and the transaction is undone by itself. The
next diagnosis sees the throttling the attempt revealed, and the next plan — both changes put
back in one transaction — resolves the incident. The timeline tells each step."""

from __future__ import annotations

from pathlib import Path

from lab.bench import SUITE_DIR, BenchConfig, load_suite, parse_agents, run_one
from storage import Store

SCENARIO = "hotel-masked-cpu-mongodb-geo"


def test_a_fix_that_unmasks_a_second_fault_is_undone_and_the_next_plan_resolves(
    tmp_path: Path,
) -> None:
    [loaded] = load_suite(SUITE_DIR).select(SCENARIO).scenarios
    [stratus] = parse_agents("stratus")
    result = run_one(loaded, stratus, BenchConfig(), workdir=tmp_path)

    assert result.mitigated, result.outcome
    assert result.rollbacks == 1 and result.tnr_violations == 0
    first, second = result.plans
    assert first == "aborted: Set port 8083 → targetPort 8083 on Service/hotel-reservation/geo"
    assert second.startswith("committed: ") and "Deployment/hotel-reservation/mongodb-geo" in second
    assert "Service/hotel-reservation/geo" in second

    store = Store.connect(f"sqlite:///{tmp_path / 'stratus.db'}")
    try:
        [incident] = store.incidents.list_by_state("closed")
        timeline = [(e.state, e.message) for e in store.incidents.timeline(incident.id)]
        states = [state for state, _ in timeline]
        assert states.count("executing") == 2
        assert states.index("aborting") < states.index("resolved")
        aborting = next(message for state, message in timeline if state == "aborting")
        assert "μ rose" in aborting
        plans = {p.id: p for p in store.plans.list_for_incident(incident.id)}
        executed = [
            plans[t.plan_id] for t in store.transactions.list_for_incident(incident.id) if t.plan_id
        ]
        assert len(executed) == 2
        # Why the next plan differed: it says what attempt 1 showed.
        reflection = str(executed[1].body.get("reflection", ""))
        assert "attempt 1" in reflection.lower() or "rolled back" in reflection.lower()
    finally:
        store.close()
