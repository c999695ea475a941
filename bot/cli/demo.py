"""`stratus demo`: the whole loop on a laptop — the lab cluster, a local Slack workspace in the
browser, and the bot — in one command. `--headless` runs one scenario to its end without a
browser and writes a JSON summary."""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from lab.bench import LoadedScenario

EXIT_FAILED = 1
EXIT_USAGE = 2


def _say(text: str) -> None:
    click.echo(f"stratus demo: {text}", err=True)


@click.command("demo")
@click.option(
    "--scenario", "scenario_id", help="A scenario id of the suite (default: a few, in turn)."
)
@click.option(
    "--suite",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Scenario directory (default: the public suite, lab/scenarios).",
)
@click.option(
    "--prometheus",
    type=click.Choice(["auto", "on", "off"]),
    default="auto",
    show_default=True,
    help="Use the real Prometheus and Alertmanager when installed (auto), always, or never.",
)
@click.option(
    "--speed",
    type=float,
    default=None,
    help="Lab seconds per wall second.  [default: 1 with the real Prometheus, 4 without]",
)
@click.option(
    "--dir",
    "home",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".stratus-demo"),
    show_default=True,
    help="Where the demo keeps its database, kubeconfig and logs.",
)
@click.option(
    "--port", type=int, default=8765, show_default=True, help="Port of the workspace page."
)
@click.option(
    "--headless",
    is_flag=True,
    help="No browser: run one scenario (--scenario, default the first of the demo) to its end.",
)
@click.option("--auto-approve", is_flag=True, help="Approve every plan (headless mode).")
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the headless summary here.",
)
@click.option("--undo", is_flag=True, help="Headless: undo the committed change at the end.")
@click.option("--seed", type=int, default=7, show_default=True)
def demo(
    *,
    scenario_id: str | None,
    suite: Path | None,
    prometheus: str,
    speed: float | None,
    home: Path,
    port: int,
    headless: bool,
    auto_approve: bool,
    json_path: Path | None,
    undo: bool,
    seed: int,
) -> None:
    """Watch Stratus detect, diagnose and fix incidents on a built-in lab cluster."""
    from lab.bench import SUITE_DIR, load_suite

    loaded_suite = load_suite(suite or SUITE_DIR)
    by_id = {s.scenario.id: s for s in loaded_suite.scenarios}
    if scenario_id is not None and scenario_id not in by_id:
        click.echo(
            f"stratus demo: no scenario {scenario_id!r}; try one of: {', '.join(sorted(by_id))}",
            err=True,
        )
        sys.exit(EXIT_USAGE)
    if headless:
        _headless(
            by_id,
            scenario_id=scenario_id,
            auto_approve=auto_approve,
            json_path=json_path,
            undo=undo,
            seed=seed,
        )
        return
    _live(
        loaded_suite.scenarios,
        by_id,
        scenario_id=scenario_id,
        prometheus=prometheus,
        speed=speed,
        home=home,
        port=port,
        seed=seed,
    )


def _headless(
    by_id: Mapping[str, LoadedScenario],
    *,
    scenario_id: str | None,
    auto_approve: bool,
    json_path: Path | None,
    undo: bool,
    seed: int,
) -> None:
    from bot.cli.demo_headless import run_headless

    if not auto_approve:
        _say("--headless needs --auto-approve: nobody is there to press Approve")
        sys.exit(EXIT_USAGE)
    if scenario_id is None:
        from bot.cli.demo_live import default_cycle

        scenario_id = default_cycle(tuple(by_id.values()))[0].scenario.id
        _say(f"no --scenario given: running the demo's first one, {scenario_id}")
    loaded = by_id[scenario_id]
    _say(f"running {scenario_id} headless (seed {seed})…")
    try:
        summary = run_headless(loaded, seed=seed, undo=undo)
    except Exception as e:  # noqa: BLE001 - the command's outer boundary: one line, non-zero
        _say(f"the run failed: {type(e).__name__}: {e}")
        sys.exit(EXIT_FAILED)
    text = json.dumps(summary, indent=2, sort_keys=True)
    if json_path is not None:
        json_path.write_text(text + "\n")
        _say(f"summary written to {json_path}")
    else:
        click.echo(text)
    diagnosis = summary["diagnosis"]
    _say(
        f"{scenario_id}: outcome {summary['outcome']}, "
        f"diagnosis {diagnosis['root_cause_service']} ({diagnosis['category']})"
    )
    ended = summary["outcome"] in ("resolved", "escalated", "no-incident")
    sys.exit(0 if ended else EXIT_FAILED)


def _live(
    scenarios: Sequence[LoadedScenario],
    by_id: Mapping[str, LoadedScenario],
    *,
    scenario_id: str | None,
    prometheus: str,
    speed: float | None,
    home: Path,
    port: int,
    seed: int,
) -> None:
    from bot.cli.demo_live import LiveDemo, LiveOptions, default_cycle
    from lab.alerts.stack import binaries

    use_prometheus = prometheus == "on" or (prometheus == "auto" and binaries() is not None)
    if prometheus == "on" and binaries() is None:
        _say("--prometheus on, but prometheus and prometheus-alertmanager are not both installed")
        sys.exit(EXIT_USAGE)
    picked = (by_id[scenario_id],) if scenario_id is not None else default_cycle(scenarios)
    # A real Prometheus scrapes in wall time: the lab must run in real time with it.
    lab_speed = speed if speed is not None else (1.0 if use_prometheus else 4.0)
    options = LiveOptions(
        scenarios=picked,
        home=home,
        workspace_port=port,
        speed=lab_speed,
        prometheus=use_prometheus,
        seed=seed,
    )
    live = LiveDemo(options, _say)

    def stop(_signum: int, _frame: FrameType | None) -> None:
        live.stop()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        live.start()
        click.echo(live.banner(), err=True)
        runner = threading.Thread(target=live.run, name="demo-scenarios", daemon=True)
        runner.start()
        while runner.is_alive():
            runner.join(0.5)
    except OSError as e:
        _say(f"cannot start: {e}")
        sys.exit(EXIT_FAILED)
    finally:
        _say("stopping…")
        live.close()
