"""One failover of the incident loop between two replica processes, for the failover test and
`benchmarks/failover_states.py`.

Replica A (`resume_worker --elect a --kill-at STATE`) wins the lab's leader Lease and works
the incident; replica B (`--elect b --resume`) is already running and campaigning. A
SIGKILLs itself the moment its incident enters STATE (after the state is persisted). B takes
the lease once it expires — counted from B's own observation, as client-go does — and resumes
through the same recovery as a restart: interrupted transactions first, then every open
incident driven to its end.

Measured: the takeover (A's death → B leads), the end B reached, every transaction's status
and the states of its undo entries (a committed one keeps them applied, so Undo still works).
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lab.faults import check_mitigation, fault
from lab.sim.world import LabWorld
from storage import Store
from storage.migrations import upgrade
from tests.agents.incident.resume_worker import LEASE, NS


@dataclass(frozen=True, slots=True, kw_only=True)
class FailoverResult:
    state: str
    takeover_s: float
    timeline: list[tuple[str, str]]  # (state, message) of the incident, oldest first
    transactions: dict[str, str]  # id → status
    undo_entries: dict[str, list[str]]  # transaction id → its undo entries' states
    mitigated: bool
    problems: str

    @property
    def end(self) -> str:
        return self.timeline[-1][0] if self.timeline else "?"


def _replica(world: LabWorld, db: str, log: Path, *args: str) -> subprocess.Popen[str]:
    """A replica process; its stderr goes to `log` (a pipe nobody reads could fill up)."""
    assert world.config.kubeconfig is not None
    with log.open("w") as err:
        return subprocess.Popen(
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
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )


def _line(process: subprocess.Popen[str], prefix: str, timeout_s: float = 60) -> str:
    """The first line of `process`'s stdout that starts with `prefix`."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith(prefix):
            return line.strip()
        if not line and process.poll() is not None:
            break
    raise AssertionError(f"no {prefix!r} line from the replica (see its log in the test dir)")


def _close(process: subprocess.Popen[str] | None) -> None:
    if process is None:
        return
    if process.poll() is None:
        process.kill()
    process.wait(10)
    if process.stdout is not None:
        process.stdout.close()


def _tail(log: Path) -> str:
    return log.read_text()[-3000:] if log.exists() else ""


def fail_over(world: LabWorld, tmp: Path, state: str, autonomy: str) -> FailoverResult:
    """Kill the leading replica when its incident enters `state`; B finishes the incident."""
    db = f"sqlite:///{tmp / 'stratus.db'}"
    upgrade(db)
    go = tmp / "go"
    injection = fault("node-selector-mismatch").inject(world, app=NS, target="reservation")
    a = b = None
    try:
        a = _replica(
            world, db, tmp / "a.log", "--elect", "a", "--go-file", str(go), "--kill-at", state,
            "--autonomy", autonomy,
        )  # fmt: skip
        _line(a, "leads")
        b = _replica(world, db, tmp / "b.log", "--elect", "b", "--resume", "--autonomy", autonomy)
        _line(b, "follows")
        go.touch()
        a.wait(120)
        died = time.time()
        assert a.returncode == -9, f"replica A ended with {a.returncode}: {_tail(tmp / 'a.log')}"
        took = float(_line(b, "leads", timeout_s=LEASE.lease_s * 10).split()[1]) - died
        b.wait(180)
        assert b.returncode == 0, f"replica B ended with {b.returncode}: {_tail(tmp / 'b.log')}"
        store = Store.connect(db)
        try:
            [row] = store.incidents.list_by_state("closed")
            timeline = [(e.state, e.message) for e in store.incidents.timeline(row.id)]
            txs = store.transactions.list_for_incident(row.id)
            statuses = {t.id: t.status for t in txs}
            undo = {t.id: [e.state for e in store.undo.stack(t.id)] for t in txs}
        finally:
            store.close()
        verdict = check_mitigation(world, injection, window_s=5)
        deadline = time.monotonic() + 20  # the lab's telemetry runs in its own threads
        while not verdict.mitigated and time.monotonic() < deadline:
            time.sleep(0.5)
            verdict = check_mitigation(world, injection, window_s=5)
        return FailoverResult(
            state=state,
            takeover_s=max(took, 0.0),
            timeline=timeline,
            transactions=statuses,
            undo_entries=undo,
            mitigated=verdict.mitigated,
            problems="; ".join(verdict.problems),
        )
    finally:
        _close(a)
        _close(b)
        fault(injection.fault_id).recover(world, injection)
