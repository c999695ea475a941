"""How long `stratus demo` takes to post its first diagnosis, in each alerting mode.

    .venv/bin/python benchmarks/demo_time.py [--write docs/benchmarks/demo-time.md]

Starts `stratus demo` as a user would (a subprocess, its own demo folder), and watches the
demo's database for the first stored Slack message of kind `diagnosis` — the moment the
diagnosis is posted in the incident channel. Reports wall seconds from launch, and the figure
for a clean clone adds the time `make demo` spends creating the virtualenv and installing the
project; `--install` measures that, and the whole first run (`make demo` on a fresh clone).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STRATUS = ROOT / ".venv" / "bin" / "stratus"


def _until_diagnosis(
    command: list[str], db: Path, *, cwd: Path | None = None, timeout_s: float = 300.0
) -> float | None:
    """Seconds from starting `command` until its database holds a posted diagnosis."""
    started = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # `make demo` runs the demo as its child: stop both
    )
    try:
        while time.monotonic() - started < timeout_s:
            if proc.poll() is not None:
                return None
            if db.exists():
                try:
                    with sqlite3.connect(db) as conn:
                        row = conn.execute(
                            "select 1 from slack_messages where kind = 'diagnosis' limit 1"
                        ).fetchone()
                except sqlite3.Error:
                    row = None
                if row:
                    return time.monotonic() - started
            time.sleep(0.25)
        return None
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def first_diagnosis(mode: str) -> float | None:
    home = Path(tempfile.mkdtemp(prefix="stratus-demo-time-"))
    try:
        return _until_diagnosis(
            [str(STRATUS), "demo", "--prometheus", mode, "--dir", str(home), "--port", "0"],
            home / "stratus.db",
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)


def install_time() -> float:
    """`make demo`'s install step on a clean clone: a fresh venv and `pip install .`."""
    with tempfile.TemporaryDirectory(prefix="stratus-clone-") as tmp:
        clone = Path(tmp) / "stratus"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        started = time.monotonic()
        subprocess.run(
            ["make", "-C", str(clone), ".venv/.installed"], check=True, capture_output=True
        )
        return time.monotonic() - started


def make_demo_time() -> float | None:
    """The whole first run, as the README gives it: `make demo` on a clean clone (install,
    then the demo with its default `--prometheus auto`) until the first posted diagnosis."""
    with tempfile.TemporaryDirectory(prefix="stratus-clone-") as tmp:
        clone = Path(tmp) / "stratus"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        return _until_diagnosis(
            ["make", "demo"], clone / ".stratus-demo" / "stratus.db", cwd=clone, timeout_s=600
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", type=Path)
    parser.add_argument(
        "--install", action="store_true", help="also time a clean clone's install and make demo"
    )
    args = parser.parse_args()
    rows = []
    for mode in ("off", "on"):
        seconds = first_diagnosis(mode)
        rows.append((mode, seconds))
        print(f"--prometheus {mode}: first diagnosis posted after {seconds} s", flush=True)
    install = install_time() if args.install else None
    whole = make_demo_time() if args.install else None
    if install is not None:
        print(f"clean clone install (venv + pip install .): {install:.1f} s")
        print(f"clean clone `make demo` to the first diagnosis: {whole} s")
    lines = [
        "# `stratus demo`: time to the first posted diagnosis",
        "",
        f"Measured by `benchmarks/demo_time.py` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        "(2 CPUs). From launching `stratus demo` to the diagnosis message stored as posted in the "
        "incident channel: the lab starts and warms up, the bot connects, the demo waits 5 s, "
        "injects the first scenario's fault, the alert fires, the incident opens and is diagnosed.",
        "",
        "| Alerting | Seconds to the first diagnosis |",
        "|---|---:|",
    ]
    names = {
        "off": "the lab's in-process rules (lab at 4× real time)",
        "on": "real Prometheus + Alertmanager (lab in real time)",
    }
    for mode, seconds in rows:
        lines.append(
            f"| {names[mode]} | {seconds:.1f} |"
            if seconds is not None
            else f"| {names[mode]} | did not post |"
        )
    if install is not None:
        lines += [
            "",
            "A clean clone's `make demo` first creates `.venv` and installs the project: "
            f"{install:.1f} s here, so the first diagnosis appears that much later on a first run.",
            "Measured whole — `make demo` on a clean clone, install included, with its default "
            "`--prometheus auto` (the real binaries are installed here) — the first diagnosis "
            + (f"was posted after **{whole:.1f} s**." if whole is not None else "was not posted."),
        ]
    text = "\n".join(lines) + "\n"
    if args.write:
        args.write.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
