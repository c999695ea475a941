"""Failover between two replica processes: the leader is SIGKILLed in DIAGNOSING,
AWAITING_APPROVAL, EXECUTING and VALIDATING; the follower, campaigning for the same Lease,
takes over within the lease (plus its retry period and a start-up margin) and brings the
incident to the end a single uninterrupted process reaches, through the same recovery as a
restart, with every undo entry kept (see `failover_run.py`; `benchmarks/failover_states.py`
writes the table of `docs/ha.md`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.sim.world import LabWorld, WorldConfig
from tests.agents.incident.failover_run import fail_over
from tests.agents.incident.resume_worker import LEASE, NS

#: A follower notices the silent leader within one retry of its last renewal, then waits out
#: the lease from there; the rest is process scheduling on a loaded 2-core machine.
TAKEOVER_BOUND_S = LEASE.lease_s + 2 * LEASE.retry_s + 2.0


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabWorld]:
    tmp = tmp_path_factory.mktemp("failover")
    config = WorldConfig(
        apps=(NS,), seed=2, stepped=False, speed=20.0, serve_api=True, kubeconfig=tmp / "kubeconfig"
    )
    with LabWorld(config) as world:
        world.wait_healthy(timeout_s=600)
        yield world


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("state", "autonomy"),
    [
        ("diagnosing", "autonomous"),
        ("awaiting_approval", "propose"),
        ("executing", "autonomous"),
        ("validating", "autonomous"),
    ],
)
def test_the_follower_takes_over_a_killed_leaders_incident(
    world: LabWorld, tmp_path: Path, state: str, autonomy: str
) -> None:
    result = fail_over(world, tmp_path, state, autonomy)
    assert result.takeover_s <= TAKEOVER_BOUND_S, result.takeover_s
    states = [s for s, _ in result.timeline]
    assert "resolved" in states and result.end == "closed", result.timeline
    assert result.mitigated, result.problems
    # Nothing left open, and the undo stack of every transaction is whole: a committed one
    # keeps its entries applied (Undo still works), a rolled-back one has them restored.
    assert "open" not in result.transactions.values(), result.transactions
    for tx, status in result.transactions.items():
        entries = result.undo_entries[tx]
        assert entries, (tx, status)
        if status == "committed":
            assert set(entries) == {"applied"}, (tx, entries)
        else:  # rolled back, its snapshot restored
            assert status == "aborted" and set(entries) <= {"restored", "skipped"}, (tx, entries)
    if state == "validating":
        # The transaction was cut short before its validation was recorded: recovery rolled
        # it back, and the new leader tried again.
        assert any("Rolled back" in m for _, m in result.timeline), result.timeline
    else:
        assert states.count(state) == 1, result.timeline  # resumed, not restarted
