"""`make demo`'s live loop through several full cycles of its scenarios, approved as Alice.

    .venv/bin/python benchmarks/demo_cycles.py [--cycles 3] [--browser] \
        [--write docs/benchmarks/demo-cycles.md]

Runs the demo exactly as `stratus demo` wires it (in-process alert rules, lab at 10x), with
the driver of `tests/demo/cycles.py`: Alice approves every plan and undoes the first
scenario's transaction, with `--browser` in the workspace's web page in Chromium. Reports
how each scenario ended against what the README says, whether the lab was ever put back while
an incident was open, and every message problem found (`lab.slack.lint`). CI runs one cycle in
the browser (`tests/demo/test_cycles.py`); this runs three.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.demo.cycles import EXPECTED, play  # noqa: E402 (after the path is set)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--speed", type=float, default=10.0)
    parser.add_argument(
        "--browser", action="store_true", help="Click as Alice in Chromium's page (needs chromium)."
    )
    parser.add_argument("--write", type=Path, help="Write the report (Markdown) here.")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="stratus-demo-cycles-") as tmp:
        chromium = shutil.which("chromium") if args.browser else None
        if args.browser and chromium is None:
            parser.error("--browser: chromium is not installed (see NOTES: apt install chromium)")
        run = play(Path(tmp) / "demo", cycles=args.cycles, speed=args.speed, chromium=chromium)
    wall = time.monotonic() - started
    rows = []
    failures = 0
    for n, ended in enumerate(run.ended):
        expected = EXPECTED.get(ended.scenario, "?")
        ok = ended.outcome == expected
        failures += not ok
        rows.append(
            f"| {n // len(EXPECTED) + 1} | `{ended.scenario}` | {ended.outcome} | {expected} | "
            f"{'yes' if ok else '**no**'} | {ended.wall_s:.0f} |"
        )
    failures += len(run.resets_under_open) + len(run.problems)
    flag = " --browser" if args.browser else ""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    report = "\n".join(
        [
            "# `make demo` through its scenarios, approved as Alice",
            "",
            f"Produced by `benchmarks/demo_cycles.py --cycles {args.cycles}{flag}` on {when} "
            f"({platform.python_version()}, lab at {args.speed:g}× real time, in-process "
            f"alert rules): {wall:.0f} s in all. Alice approves every plan and undoes the "
            "first scenario's transaction"
            + (" by clicking in the workspace's page in Chromium" if args.browser else "")
            + "; each scenario must end as the README says. Her Undo brings the fault back, "
            "so that incident is escalated to her (no plan behind her back) and closes once "
            "the demo puts the lab back.",
            "",
            "| Cycle | Scenario | Ended | README says | As said | Wall s (seen → closed) |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
            f"Lab put back while an incident was open: {len(run.resets_under_open)}"
            + "".join(f"\n- {r}" for r in run.resets_under_open),
            "",
            f"Message problems (repeated line, raw user id, unknown emoji, plural): "
            f"{len(run.problems)}" + "".join(f"\n- {p}" for p in run.problems),
            "",
        ]
    )
    print(report)
    if args.write:
        args.write.write_text(report)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
