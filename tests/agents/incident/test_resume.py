"""Killing the process in each state of the incident and restarting it resumes the incident to
the same end: the state machine keeps nothing in memory that it needs."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.faults import check_mitigation, fault
from lab.sim.world import LabWorld, WorldConfig
from storage import Store
from storage.migrations import upgrade

NS = "hotel-reservation"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabWorld]:
    tmp = tmp_path_factory.mktemp("resume")
    config = WorldConfig(
        apps=(NS,), seed=2, stepped=False, speed=20.0, serve_api=True, kubeconfig=tmp / "kubeconfig"
    )
    with LabWorld(config) as world:
        world.wait_healthy(timeout_s=600)
        yield world


def worker(world: LabWorld, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert world.config.kubeconfig is not None
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.agents.incident.resume_worker",
            "--kubeconfig",
            str(world.config.kubeconfig),
            "--db",
            db,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("state", "autonomy"),
    [
        ("detected", "autonomous"),
        ("diagnosing", "autonomous"),
        ("diagnosed", "autonomous"),
        ("planning", "autonomous"),
        ("awaiting_approval", "propose"),
        ("executing", "autonomous"),
        ("validating", "autonomous"),
        ("committed", "autonomous"),
        ("resolved", "autonomous"),
    ],
)
def test_a_killed_loop_resumes_every_state_to_the_same_end(
    world: LabWorld, tmp_path: Path, state: str, autonomy: str
) -> None:
    db = f"sqlite:///{tmp_path / 'stratus.db'}"
    upgrade(db)
    injection = fault("node-selector-mismatch").inject(world, app=NS, target="reservation")
    try:
        killed = worker(world, db, "--kill-at", state, "--autonomy", autonomy)
        assert killed.returncode == -9, killed.stderr[-3000:]
        store = Store.connect(db)
        [row] = store.incidents.list_open()
        assert row.state == state
        store.close()
        resumed = worker(world, db, "--resume", "--autonomy", autonomy)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        store = Store.connect(db)
        [closed] = store.incidents.list_by_state("closed")
        timeline = [(e.state, e.message) for e in store.incidents.timeline(closed.id)]
        txs = sorted(store.transactions.list_for_incident(closed.id), key=lambda t: t.started_at)
        actions = {p.id: p.actions for p in store.plans.list_for_incident(closed.id)}
        store.close()
        states = [s for s, _ in timeline]
        assert "resolved" in states and states[-1] == "closed", timeline
        if state == "validating":
            # The transaction was cut short before its validation was recorded: recovery
            # rolled it back, and the loop tried again — the same plan, which the
            # interruption did not refute.
            assert any("Rolled back" in m for _, m in timeline), timeline
            cut, *_, healed = txs
            assert cut.status == "aborted" and (cut.reason or "").startswith("interrupted: ")
            assert healed.status == "committed", [(t.status, t.reason) for t in txs]
            assert actions[healed.plan_id or ""] == actions[cut.plan_id or ""]
        else:
            assert states.count(state) == 1, timeline  # resumed, not restarted
        # The lab runs at 20x in its own threads: give its telemetry a moment to catch up.
        deadline = time.monotonic() + 20
        verdict = check_mitigation(world, injection, window_s=5)
        while not verdict.mitigated and time.monotonic() < deadline:
            time.sleep(0.5)
            verdict = check_mitigation(world, injection, window_s=5)
        assert verdict.mitigated, verdict.problems
    finally:
        fault(injection.fault_id).recover(world, injection)
