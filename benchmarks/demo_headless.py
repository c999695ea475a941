"""`stratus demo --headless` over every public scenario, as a user runs it.

    .venv/bin/python benchmarks/demo_headless.py [--jobs 2] \
        [--write docs/benchmarks/demo-headless.md]

Each scenario of `lab/scenarios` runs in its own process:
`stratus demo --headless --auto-approve --scenario ID --json OUT`. The table says how each
ended against what the scenario expects: a fixable fault ends with a committed transaction and
a resolved incident, a fault no undoable action can fix ends escalated with no transaction, a
no-fault control opens no incident. The exit code is 1 when any run disagrees or fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STRATUS = ROOT / ".venv" / "bin" / "stratus"
SUITE = ROOT / "lab" / "scenarios"

#: What each expectation must end as: (outcome, status of the last transaction).
EXPECTED = {
    "mitigated": ("resolved", "committed"),
    "escalated": ("escalated", None),
    "no-incident": ("no-incident", None),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    scenario: str
    code: int
    summary: dict[str, object]
    wall_s: float

    @property
    def expect(self) -> str:
        return str(self.summary.get("expect", "?"))

    @property
    def outcome(self) -> str:
        return str(self.summary.get("outcome", "?"))

    @property
    def last_status(self) -> str | None:
        tx = self.summary.get("transaction")
        return str(tx.get("status")) if isinstance(tx, dict) else None

    @property
    def ok(self) -> bool:
        wanted = EXPECTED.get(self.expect)
        return self.code == 0 and wanted is not None and (self.outcome, self.last_status) == wanted


def scenario_ids() -> list[str]:
    return sorted(p.stem for p in SUITE.glob("*.yaml"))


def run(scenario: str) -> Run:
    with tempfile.TemporaryDirectory(prefix="stratus-headless-") as tmp:
        out = Path(tmp) / "out.json"
        started = time.monotonic()
        proc = subprocess.run(
            [
                str(STRATUS),
                "demo",
                "--headless",
                "--auto-approve",
                "--scenario",
                scenario,
                "--dir",
                tmp,
                "--json",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        summary = json.loads(out.read_text()) if out.exists() else {}
        return Run(
            scenario=scenario,
            code=proc.returncode,
            summary=summary,
            wall_s=time.monotonic() - started,
        )


def report(runs: list[Run], wall_s: float) -> str:
    agree = sum(r.ok for r in runs)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# `stratus demo --headless` over the public suite",
        "",
        f"Produced by `benchmarks/demo_headless.py` on {now}: every scenario of `lab/scenarios` "
        "run with `stratus demo --headless --auto-approve --scenario ID --json …` (seed 7), "
        "each in its own process. Fixable faults must end with a committed transaction and a "
        "resolved incident, faults no undoable action can fix escalated with no transaction, "
        "the no-fault controls with no incident. (`Oracle` is the lab's mitigation oracle at "
        "the end of the run: an escalated fault is, by design, still there.)",
        "",
        f"**{agree}/{len(runs)} runs ended as expected**, in {wall_s:.0f} s of wall time.",
        "",
        "| Scenario | Expected | Outcome | Transactions | Last transaction | Oracle | Exit |",
        "|---|---|---|---:|---|---|---:|",
    ]
    for r in runs:
        mark = "" if r.ok else " ✗"
        lines.append(
            f"| `{r.scenario}` | {r.expect} | {r.outcome}{mark} | "
            f"{r.summary.get('attempts', 0)} | {r.last_status or '–'} | "
            f"{r.summary.get('mitigated', '?')} | {r.code} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--write", type=Path, help="write the Markdown report here")
    args = parser.parse_args()
    started = time.monotonic()
    ids = scenario_ids()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        runs = []
        for done in pool.map(run, ids):
            print(
                f"{done.scenario}: {done.outcome} ({done.last_status}), exit {done.code}"
                f"{'' if done.ok else '  <-- not as expected'}",
                flush=True,
            )
            runs.append(done)
    text = report(runs, time.monotonic() - started)
    if args.write:
        args.write.write_text(text)
    else:
        print(text)
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
