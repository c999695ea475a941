"""Failover between `stratus run` processes in each state of one incident: the leading
process is SIGKILLed when the incident enters DIAGNOSING, AWAITING_APPROVAL, EXECUTING and
VALIDATING in turn, a fresh replica replaces it each time, and the incident must still end
closed with the fault mitigated and every undo entry kept (`tests/bot/replica_failover.py`,
also run by `tests/bot/test_replica_failover.py`).

Writes `docs/benchmarks/failover-processes.md`: per kill, the state, the replicas killed and
taking over, and the takeover time (the kill → the new leader's `/readyz` says it leads); per
run, the end, the transactions and their undo entries, the Approve clicks and the time from
the fault to the end. Needs prometheus, prometheus-alertmanager and PostgreSQL
(`STRATUS_TEST_POSTGRES_URL`). Run: `.venv/bin/python benchmarks/failover_processes.py
[--runs N]`. A measurement, not a test: each run takes about five minutes of real time.
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import sys
import tempfile
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.bot.replica_failover import (  # noqa: E402
    LOCK_LEASE_S,
    THINK_S,
    ProcessFailover,
    fail_over_in_each_state,
)
from tests.bot.replicas import LEASE_S, RENEW_DEADLINE_S, RETRY_S  # noqa: E402

OUT = ROOT / "docs" / "benchmarks" / "failover-processes.md"


def run(runs: int) -> list[ProcessFailover]:
    results: list[ProcessFailover] = []
    for n in range(runs):
        with tempfile.TemporaryDirectory() as home, ExitStack() as stack:
            result = fail_over_in_each_state(Path(home), stack)
        results.append(result)
        for t in result.takeovers:
            print(f"run {n + 1} {t.state:18s} takeover {t.takeover_s:5.2f} s", flush=True)
        print(f"run {n + 1} → {result.end}, mitigated {result.mitigated}", flush=True)
    return results


def _transactions(result: ProcessFailover) -> str:
    parts = []
    for tx, status in result.transactions.items():
        entries = result.undo_entries.get(tx, [])
        parts.append(f"{status} ({len(entries)} undo: {', '.join(sorted(set(entries))) or '-'})")
    return "; ".join(parts) or "none"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def report(results: list[ProcessFailover]) -> str:
    lines = [
        "# Failover between `stratus run` processes, in each state of one incident",
        "",
        f"Written by `benchmarks/failover_processes.py` on {datetime.now(UTC):%Y-%m-%d %H:%M} "
        f"UTC ({platform.machine()}, Python {platform.python_version()}), {len(results)} "
        "run(s). Two `stratus run` replicas at a time on the lab (hotel-reservation in real "
        "time, fault `wrong-target-port` on geo), the real Prometheus and Alertmanager, "
        "PostgreSQL, the Claude reasoner against the scripted Messages API stand-in (it "
        f"thinks {THINK_S:g} s per diagnosis), policy `propose` with a 20 s validation "
        f"window. Leader lease {LEASE_S:g} s, renew deadline {RENEW_DEADLINE_S:g} s, retry "
        f"{RETRY_S:g} s; writer lease {LOCK_LEASE_S} s. The leading process is SIGKILLed "
        "when the database shows the incident in the state; a fresh replica replaces it.",
        "",
        "| run | state killed | killed → new leader | takeover (s) |",
        "|---:|---|---|---:|",
    ]
    for n, r in enumerate(results, 1):
        for t in r.takeovers:
            lines.append(f"| {n} | {t.state} | {t.killed} → {t.leader} | {t.takeover_s:.2f} |")
    lines += [
        "",
        "| run | end | mitigated | transactions (undo entries) | clicks | fault → end (s) "
        "| VALIDATING kill → recovery (s) |",
        "|---:|---|---|---|---:|---:|---:|",
    ]
    for n, r in enumerate(results, 1):
        mitigated = "yes" if r.mitigated else "no: " + r.problems
        lines.append(
            f"| {n} | {r.end} | {mitigated} | {_transactions(r)} | {r.approvals} "
            f"| {r.elapsed_s:.0f} | {_seconds(r.recovery_s)} |"
        )
    times = [t.takeover_s for r in results for t in r.takeovers]
    if times:
        lines += [
            "",
            f"Takeover median {statistics.median(times):.2f} s, max {max(times):.2f} s "
            f"(lease {LEASE_S:g} s + retry {RETRY_S:g} s, plus polling `/readyz` every "
            "0.1 s). A transaction rolled back after the EXECUTING or VALIDATING kill is "
            "recovery at work: the killed leader never recorded its validation, so the new "
            "leader restores the snapshot once the dead writer's lease lapses (its undo "
            "entries are then `restored`) and the plan is tried again. Recovery looks again "
            f"a third of the writer lease ({LOCK_LEASE_S / 3:g} s) after finding it held, so "
            f"the rollback starts within about {LOCK_LEASE_S * 4 / 3:g} s of the kill.",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    results = run(args.runs)
    OUT.write_text(report(results))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
