"""The public bench under several signal profiles: does Stratus score the same whatever metric
convention the cluster's telemetry speaks?

    .venv/bin/python benchmarks/bench_profiles.py [--profiles lab,istio,otel] [--seed 7]
        [--jobs 2] [--scenario ID] [--write docs/benchmarks/bench-profiles.md]
        [--log docs/benchmarks/bench-profiles.log]

Runs `stratus bench --agents stratus --reasoner offline --signals P` as a user would (a
subprocess each) for every profile P, on the same suite and seed: the simulated traffic is the
same, only the names Stratus reads it by change (`lab.sim.convention_view`). Reports, per
profile, mitigation success, detection accuracy, localisation Acc@1, TNR violations, harmful
end states and wall time; the spread between profiles in percentage points; and the scenarios
whose outcome differs. Issue 16 is done when the spread is within two points.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STRATUS = ROOT / ".venv" / "bin" / "stratus"
#: Issue 16's bar: the profiles' scores within this many points of each other.
BAR_POINTS = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileRun:
    profile: str
    summary: dict[str, Any]
    outcomes: dict[str, str]  # scenario id → outcome
    wall_s: float
    exit_code: int


def _command(
    profile: str, seed: int, jobs: int, json_path: Path, scenario: str | None
) -> list[str]:
    only = ["--scenario", scenario] if scenario else []
    return [
        str(STRATUS),
        "bench",
        "--agents",
        "stratus",
        "--reasoner",
        "offline",
        "--seed",
        str(seed),
        "--jobs",
        str(jobs),
        "--signals",
        profile,
        "--json",
        str(json_path),
        *only,
    ]


def run(
    profile: str, *, seed: int, jobs: int, workdir: Path, log: Path | None, scenario: str | None
) -> ProfileRun:
    """One `stratus bench` under `profile`; its progress lines go to `log` (else stderr)."""
    json_path = workdir / f"{profile}.json"
    started = time.monotonic()
    with open(log, "a", encoding="utf-8") if log is not None else nullcontext(sys.stderr) as err:
        proc = subprocess.run(
            _command(profile, seed, jobs, json_path, scenario),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            check=False,
        )
        err.write(proc.stdout)
    wall_s = time.monotonic() - started
    report = json.loads(json_path.read_text(encoding="utf-8"))
    if report.get("signals") != profile:
        raise SystemExit(f"{json_path}: the report says {report.get('signals')!r}, not {profile}")
    agent = report["agents"]["stratus"]
    return ProfileRun(
        profile=profile,
        summary=agent["summary"],
        outcomes={row["id"]: row["outcome"] for row in agent["scenarios"]},
        wall_s=wall_s,
        exit_code=proc.returncode,
    )


FIGURES = (
    ("mitigation_success_rate", "Mitigation"),
    ("detection_accuracy", "Detection"),
    ("localization_acc1", "Acc@1"),
)


def render(runs: list[ProfileRun], *, seed: int, jobs: int, command: str) -> str:
    lines = [
        "# The bench under several signal profiles",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; seed {seed}; agent `stratus`; offline "
        f"reasoner; {jobs} job(s) on 2 cores. Command: `{command}`, which runs for each profile "
        "`stratus bench --agents stratus --reasoner offline "
        f"--seed {seed} --jobs {jobs} --signals PROFILE --json …`.",
        "",
        "Same suite, seed and simulated traffic each time; only the metric convention the lab's "
        "telemetry is read in changes, and the built-in signal profile Stratus reads it with "
        "(`SimMetrics` over `lab.sim.convention_view.ConventionView`: what a Prometheus "
        "scraping the lab's exporter in that convention would hold). The alert rules stay in "
        "the lab's names.",
        "",
        "| Profile | Mitigation | Detection | Acc@1 | TNR violations | Harmful end states "
        "| Scenarios | Wall time |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        s = r.summary
        failed = "" if r.exit_code == 0 else f" (exit {r.exit_code})"
        lines.append(
            f"| `{r.profile}` | {100 * s['mitigation_success_rate']:.1f} % "
            f"| {100 * s['detection_accuracy']:.1f} % | {100 * s['localization_acc1']:.1f} % "
            f"| {s['tnr_violations']} | {s['harmful_end_states']} | {s['scenarios']} "
            f"| {r.wall_s:.0f} s{failed} |"
        )
    lines += ["", "Spread between the profiles (largest minus smallest), in percentage points:", ""]
    worst = 0.0
    for key, label in FIGURES:
        values = [100 * r.summary[key] for r in runs]
        spread = max(values) - min(values)
        worst = max(worst, spread)
        lines.append(f"- {label}: {spread:.1f}")
    verdict = "within" if worst <= BAR_POINTS else "**outside**"
    lines += [
        "",
        f"Largest spread {worst:.1f} points: {verdict} issue 16's bar of {BAR_POINTS:g} points.",
        "",
    ]
    differ = sorted(sid for sid in runs[0].outcomes if len({r.outcomes.get(sid) for r in runs}) > 1)
    if differ:
        lines += ["Scenarios whose outcome differs between profiles:", ""]
        header = " | ".join(f"`{r.profile}`" for r in runs)
        lines += [f"| Scenario | {header} |", "|---|" + "---|" * len(runs)]
        for sid in differ:
            cells = " | ".join(r.outcomes.get(sid, "–") for r in runs)
            lines.append(f"| `{sid}` | {cells} |")
    else:
        lines.append("Every scenario ends the same way under every profile.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="lab,istio,otel")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--write", type=Path, default=None)
    parser.add_argument("--scenario", default=None, help="only this scenario (a quick check)")
    parser.add_argument("--log", type=Path, default=None, help="append the runs' progress here")
    args = parser.parse_args()
    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    command = "python benchmarks/bench_profiles.py " + " ".join(sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix="bench-profiles-") as tmp:
        if args.log is not None:
            args.log.parent.mkdir(parents=True, exist_ok=True)
            args.log.write_text("", encoding="utf-8")
        runs = [
            run(
                p,
                seed=args.seed,
                jobs=args.jobs,
                workdir=Path(tmp),
                log=args.log,
                scenario=args.scenario,
            )
            for p in profiles
        ]
    text = render(runs, seed=args.seed, jobs=args.jobs, command=command.strip())
    if args.write is not None:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
