"""`stratus bench`: run incident scenarios end to end on the lab and score Stratus against its
baselines.

    stratus bench [--suite DIR] [--agents stratus,naive,no-undo,no-retry] [--seed N]
                  [--scenario ID] [--jobs N] [--reasoner auto|offline|claude]
                  [--signals lab|otel|istio|linkerd|micrometer|ingress-nginx]
                  [--plan-noise P | --sweep plan-noise=0,0.2,0.4] [--chaos]
                  [--json PATH] [--markdown PATH] [--chart PATH]

One progress line per run (scenario, agent, outcome, wall seconds) on stderr. The exit code is
1 when a scenario file or run was unusable (each is reported with file, field and reason; the
other scenarios still run), 2 for a bad command line or setting, 0 otherwise — whatever the
scores are. The reasoner is the offline one unless `--reasoner claude`, or `auto` with
ANTHROPIC_API_KEY configured (through `bot.config`, like every setting). `--signals` makes the
lab's telemetry read as another metric convention would expose it, through the built-in signal
profile of that name (the alert rules stay in the lab's names); the report says which.
`--plan-noise P` makes the planner propose a plausible wrong plan with probability P, the same
way for every agent (`lab.bench.fallible`, documented in `lab/scenarios/README.md`); `--sweep
plan-noise=…` runs the whole bench at each value and writes one report (JSON, Markdown, and a
chart of the curves: healed without a page, collateral drift, harmful end states against P).
`--chaos` switches outages on at seeded moments of every run (the Kubernetes API refusing or
stalled, Prometheus down; `lab.bench.chaos`), the same for every agent, and counts the commits
made on a sustain window an outage overlapped.

This module is the composition root of the bench: the only place that joins `bot.config` to
the lab. The lab is imported inside the command so that `stratus --help` stays fast.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from bot.config import SettingsError, environment, load_settings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agents.diagnosis import LanguageModel
    from lab.bench import AgentSpec, BenchConfig, BenchReport, Suite

EXIT_FAILED = 1
EXIT_USAGE = 2
#: `lab.sim.conventions.CONVENTIONS`, spelled out so that `stratus --help` need not import the
#: lab; a test checks that the two agree.
SIGNAL_CHOICES = ("lab", "otel", "istio", "linkerd", "micrometer", "ingress-nginx")

logger = logging.getLogger(__name__)


def _model(reasoner: str) -> LanguageModel | None:
    """The Claude model when asked for (or `auto` with a key configured), else None."""
    if reasoner == "offline":
        return None
    try:
        settings = load_settings(environment()).anthropic
    except SettingsError as e:
        click.echo(f"stratus: invalid setting {e}", err=True)
        sys.exit(EXIT_USAGE)
    if settings.api_key is None:
        if reasoner == "claude":
            click.echo("stratus: --reasoner claude needs ANTHROPIC_API_KEY", err=True)
            sys.exit(EXIT_USAGE)
        return None
    from bot.services import claude_model

    return claude_model(settings)


_F = TypeVar("_F", bound=Callable[..., Any])


def _report_file(flag: str, help: str) -> Callable[[_F], _F]:
    """An option naming a file the report is written to (`--json` → `json_path`)."""
    return click.option(
        flag,
        f"{flag.removeprefix('--')}_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help=help,
    )


def _write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")


@click.command("bench")
@click.option(
    "--suite",
    "suite_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory of scenario files (default: the public suite, lab/scenarios).",
)
@click.option(
    "--agents",
    default="stratus,naive,no-undo,no-retry",
    show_default=True,
    help="Comma-separated agents: stratus, naive, no-undo, no-retry.",
)
@click.option(
    "--seed", type=int, default=7, show_default=True, help="Lab seed (same seed, same scores)."
)
@click.option("--scenario", "scenario_id", default=None, help="Run only the scenario with this id.")
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Worker processes (runs are independent; the scores do not depend on it).",
)
@click.option(
    "--reasoner",
    type=click.Choice(["auto", "offline", "claude"]),
    default="auto",
    show_default=True,
    help="auto: Claude when ANTHROPIC_API_KEY is configured, else the offline reasoner.",
)
@click.option(
    "--signals",
    type=click.Choice(SIGNAL_CHOICES),
    default="lab",
    show_default=True,
    help="Metric convention of the lab's telemetry, read with the signal profile of that name.",
)
@click.option(
    "--plan-noise",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Probability that a proposed plan is replaced by a plausible wrong one (all agents).",
)
@click.option(
    "--chaos",
    is_flag=True,
    default=False,
    help="Outages (API refusing or stalled, Prometheus down) at seeded moments of every run.",
)
@click.option(
    "--sweep",
    "sweep_text",
    default=None,
    help="Run the bench at each value and write one report: plan-noise=0,0.2,0.4.",
)
@_report_file("--json", "Write the report as JSON (summary and every scenario, per agent).")
@_report_file("--markdown", "Write the comparison table, outcomes and failures as Markdown.")
@_report_file("--chart", "Write a PNG chart of the agents side by side.")
def bench(
    *,
    suite_dir: Path | None,
    agents: str,
    seed: int,
    scenario_id: str | None,
    jobs: int,
    reasoner: str,
    signals: str,
    plan_noise: float,
    chaos: bool,
    sweep_text: str | None,
    json_path: Path | None,
    markdown_path: Path | None,
    chart_path: Path | None,
) -> None:
    """Run incident scenarios end to end on the lab and score the agents."""
    from lab.bench import SUITE_DIR, BenchConfig

    chosen, sweep_values = _choices(agents, sweep_text)
    directory = suite_dir or SUITE_DIR
    suite = _suite(directory, scenario_id)
    model = _model(reasoner)
    if sweep_values is not None:
        if model is not None:
            click.echo("stratus: --sweep runs with the offline reasoner", err=True)
        _sweep(
            suite,
            chosen,
            BenchConfig(seed=seed, signals=signals, chaos=chaos),
            sweep_values,
            suite_name=str(directory),
            jobs=jobs,
            paths=(json_path, markdown_path, chart_path),
        )
        return
    if model is not None and jobs > 1:
        click.echo("stratus: the Claude reasoner runs with --jobs 1", err=True)
        jobs = 1
    total = len(suite.scenarios) * len(chosen)
    click.echo(
        f"bench: {len(suite.scenarios)} scenario(s) × {len(chosen)} agent(s) = {total} run(s), "
        f"seed {seed}, {'offline' if model is None else model.name} reasoner, signal profile "
        f"{signals}, plan noise {plan_noise:g}, {'chaos, ' if chaos else ''}{jobs} job(s)",
        err=True,
    )
    report = _run(
        suite,
        chosen,
        BenchConfig(seed=seed, signals=signals, plan_noise=plan_noise, chaos=chaos),
        suite_name=str(directory),
        model=model,
        jobs=jobs,
    )
    _write_report(report, paths=(json_path, markdown_path, chart_path))
    _echo_summaries(report)
    click.echo(f"bench finished in {report.wall_s:.0f} s", err=True)
    if report.failed:
        for line in report.scenario_errors:
            click.echo(f"stratus: scenario error: {line}", err=True)
        sys.exit(EXIT_FAILED)


def _choices(
    agents: str, sweep_text: str | None
) -> tuple[tuple[AgentSpec, ...], tuple[float, ...] | None]:
    """The agents and the sweep's values from the command line (a usage error if wrong)."""
    from lab.bench import BenchError, parse_agents
    from lab.bench.sweep import parse_sweep

    try:
        chosen = parse_agents(agents)
    except BenchError as e:
        raise click.BadParameter(str(e), param_hint="--agents") from e
    try:
        sweep_values = parse_sweep(sweep_text) if sweep_text is not None else None
    except BenchError as e:
        raise click.BadParameter(str(e), param_hint="--sweep") from e
    return chosen, sweep_values


def _suite(directory: Path, scenario_id: str | None) -> Suite:
    """The suite (or its one scenario asked for), its file errors reported on stderr."""
    from lab.bench import load_suite

    suite = load_suite(directory)
    if scenario_id is not None:
        suite = suite.select(scenario_id)
        if not suite.scenarios and not suite.errors:
            raise click.BadParameter(
                f"no scenario {scenario_id!r} in {directory}", param_hint="--scenario"
            )
    for error in suite.errors:
        click.echo(f"stratus: scenario error: {error}", err=True)
    return suite


def _run(
    suite: Suite,
    chosen: Sequence[AgentSpec],
    config: BenchConfig,
    *,
    suite_name: str,
    model: LanguageModel | None,
    jobs: int,
) -> BenchReport:
    """Run the bench, one progress line per run on stderr; the model is closed after."""
    from lab.bench import run_bench
    from lab.bench.results import RunResult

    def progress(result: RunResult, done: int, count: int) -> None:
        click.echo(
            f"[{done}/{count}] {result.id} · {result.agent}: {result.outcome} "
            f"({result.lab_s:.0f} lab s, {result.wall_s:.1f} s)",
            err=True,
        )

    try:
        return run_bench(
            suite,
            chosen,
            config,
            suite_name=suite_name,
            model=model,
            jobs=jobs,
            on_result=progress,
        )
    finally:
        if model is not None:
            close = getattr(model, "close", None)
            if callable(close):
                close()


def _write_report(
    report: BenchReport, *, paths: tuple[Path | None, Path | None, Path | None]
) -> None:
    import json

    from lab.bench.chart import render_chart
    from lab.bench.markdown import render_markdown

    json_path, markdown_path, chart_path = paths
    if json_path is not None:
        _write(json_path, json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    if markdown_path is not None:
        _write(markdown_path, render_markdown(report))
    if chart_path is not None:
        _write(chart_path, render_chart(report))


def _echo_summaries(report: BenchReport) -> None:
    for name in report.agents:
        s = report.summaries[name]
        click.echo(
            f"{name}: mitigation {100 * s.mitigation_success_rate:.1f} %, detection "
            f"{100 * s.detection_accuracy:.1f} %, Acc@1 {100 * s.localization_acc1:.1f} %, "
            f"TNR violations {s.tnr_violations}, harmful end states {s.harmful_end_states}, "
            f"healed without a page {100 * s.healed_without_page_rate:.1f} %, collateral "
            f"drift {s.collateral_drift}, pages {s.pages}"
        )


def _sweep(
    suite: Suite,
    chosen: Sequence[AgentSpec],
    config: BenchConfig,
    values: Sequence[float],
    *,
    suite_name: str,
    jobs: int,
    paths: tuple[Path | None, Path | None, Path | None],
) -> None:
    import json

    from lab.bench.results import RunResult
    from lab.bench.sweep import render_sweep_chart, render_sweep_markdown, run_sweep

    json_path, markdown_path, chart_path = paths
    click.echo(
        f"bench sweep: plan noise {', '.join(f'{v:g}' for v in values)} × "
        f"{len(suite.scenarios)} scenario(s) × {len(chosen)} agent(s), seed {config.seed}, "
        f"{jobs} job(s)",
        err=True,
    )

    def progress(result: RunResult, done: int, count: int) -> None:
        click.echo(f"[{done}/{count}] {result.id} · {result.agent}: {result.outcome}", err=True)

    sweep = run_sweep(
        suite, chosen, config, values, suite_name=suite_name, jobs=jobs, on_result=progress
    )
    if json_path is not None:
        _write(json_path, json.dumps(sweep.to_json(), indent=2, ensure_ascii=False) + "\n")
    chart_name = None
    if chart_path is not None:
        _write(chart_path, render_sweep_chart(sweep))
        chart_name = chart_path.name
    if markdown_path is not None:
        _write(markdown_path, render_sweep_markdown(sweep, chart=chart_name))
    for value, report in sweep.points:
        for name in report.agents:
            s = report.summaries[name]
            click.echo(
                f"P={value:g} {name}: healed without a page "
                f"{100 * s.healed_without_page_rate:.1f} %, collateral drift "
                f"{s.collateral_drift}, harmful end states {s.harmful_end_states}, TNR "
                f"violations {s.tnr_violations}, pages {s.pages}"
            )
    if sweep.failed:
        sys.exit(EXIT_FAILED)
