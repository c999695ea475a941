"""Failover in each state of an incident: the leading replica process is SIGKILLed when its
incident enters DIAGNOSING, AWAITING_APPROVAL, EXECUTING or VALIDATING; the follower process,
campaigning for the same Lease, takes over and finishes the incident through the same
recovery as a restart (`tests/agents/incident/failover_run.py`, also run by
`tests/agents/incident/test_failover.py`).

Writes `docs/benchmarks/failover-states.md`: per state killed, the takeover time (A's death →
B leads), the end reached, the transactions and their undo entries, and whether the fault
was mitigated. Run: `.venv/bin/python benchmarks/failover_states.py [--runs N]`. A
measurement, not a test.
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab.sim.world import LabWorld, WorldConfig  # noqa: E402
from tests.agents.incident.failover_run import FailoverResult, fail_over  # noqa: E402
from tests.agents.incident.resume_worker import LEASE, NS  # noqa: E402

OUT = ROOT / "docs" / "benchmarks" / "failover-states.md"
STATES = (
    ("diagnosing", "autonomous"),
    ("awaiting_approval", "propose"),
    ("executing", "autonomous"),
    ("validating", "autonomous"),
)


def run(runs: int) -> list[FailoverResult]:
    results: list[FailoverResult] = []
    with tempfile.TemporaryDirectory() as home:
        config = WorldConfig(
            apps=(NS,),
            seed=2,
            stepped=False,
            speed=20.0,
            serve_api=True,
            kubeconfig=Path(home) / "kubeconfig",
        )
        with LabWorld(config) as world:
            world.wait_healthy(timeout_s=600)
            n = 0
            for _ in range(runs):
                for state, autonomy in STATES:
                    n += 1
                    where = Path(home) / f"run{n}"
                    where.mkdir()
                    result = fail_over(world, where, state, autonomy)
                    results.append(result)
                    print(
                        f"{state:18s} takeover {result.takeover_s:5.2f} s → {result.end}",
                        flush=True,
                    )
    return results


def _transactions(result: FailoverResult) -> str:
    parts = []
    for tx, status in result.transactions.items():
        entries = result.undo_entries.get(tx, [])
        parts.append(f"{status} ({len(entries)} undo: {', '.join(sorted(set(entries))) or '-'})")
    return "; ".join(parts) or "none"


def report(results: list[FailoverResult], runs: int) -> str:
    lines = [
        "# Failover in each state of an incident",
        "",
        f"Written by `benchmarks/failover_states.py` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        f"({platform.machine()}, Python {platform.python_version()}), {runs} run(s) per state. "
        "Two replica processes on the lab (hotel-reservation at 20× lab speed, fault "
        "`node-selector-mismatch` on reservation, SQLite); lease "
        f"{LEASE.lease_s:g} s, renew deadline {LEASE.renew_deadline_s:g} s, retry "
        f"{LEASE.retry_s:g} s. The leader SIGKILLs itself the moment its incident's state is "
        "persisted; the takeover is from its death to the follower leading.",
        "",
        "| state killed | takeover (s) | end | transactions (undo entries) | mitigated |",
        "|---|---:|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.state} | {r.takeover_s:.2f} | {r.end} | {_transactions(r)} "
            f"| {'yes' if r.mitigated else 'no: ' + r.problems} |"
        )
    times = [r.takeover_s for r in results]
    if times:
        lines += [
            "",
            f"Takeover median {statistics.median(times):.2f} s, max {max(times):.2f} s "
            f"(lease {LEASE.lease_s:g} s + retry {LEASE.retry_s:g} s, plus the new leader's "
            "process scheduling). A rolled-back transaction in the VALIDATING row is recovery "
            "at work: the killed leader never recorded its validation, so the new leader "
            "restores the snapshot (its undo entries are then `restored`) and plans again.",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    results = run(args.runs)
    OUT.write_text(report(results, args.runs))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
