"""`stratus bench --sweep plan-noise=0,0.2,0.4`: the same suite, agents and seed at each plan
noise, in one report with the curves an SRE reads — undoable faults healed without a page,
collateral drift, harmful end states — against P.

Each point is a whole `BenchReport` (kept in the JSON), so every figure of the curves can be
traced to its runs. The chart is drawn like `lab.bench.chart`: on a `Figure` with the Agg
canvas, fixed style, no timestamp, so the same sweep gives the same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lab.bench.agents import AgentSpec
from lab.bench.bench import OnResult, run_bench
from lab.bench.errors import BenchError
from lab.bench.markdown import render_markdown
from lab.bench.results import AgentSummary, BenchReport
from lab.bench.session import BenchConfig
from lab.bench.suite import Suite

SWEEPABLE = ("plan-noise",)


def parse_sweep(text: str) -> tuple[float, ...]:
    """`plan-noise=0,0.2,0.4` → (0.0, 0.2, 0.4)."""
    name, sep, values = text.partition("=")
    if not sep or name.strip() not in SWEEPABLE:
        raise BenchError(f"--sweep takes {' or '.join(SWEEPABLE)}=V1,V2,…; got {text!r}")
    try:
        points = tuple(float(v) for v in values.split(",") if v.strip())
    except ValueError as e:
        raise BenchError(f"--sweep {text!r}: {e}") from e
    if not points or any(not 0.0 <= p <= 1.0 for p in points):
        raise BenchError(f"--sweep {text!r}: plan noise values are probabilities in [0, 1]")
    return tuple(sorted(set(points)))


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepReport:
    parameter: str
    points: tuple[tuple[float, BenchReport], ...]

    @property
    def agents(self) -> tuple[str, ...]:
        return self.points[0][1].agents if self.points else ()

    @property
    def failed(self) -> bool:
        return any(r.failed for _, r in self.points)

    def to_json(self) -> dict[str, Any]:
        return {
            "parameter": self.parameter,
            "points": [{"value": p, "report": r.to_json()} for p, r in self.points],
        }


def run_sweep(
    suite: Suite,
    agents: Sequence[AgentSpec],
    config: BenchConfig,
    values: Sequence[float],
    *,
    suite_name: str = "",
    jobs: int = 1,
    on_result: OnResult | None = None,
) -> SweepReport:
    points = tuple(
        (
            p,
            run_bench(
                suite,
                agents,
                replace(config, plan_noise=p),
                suite_name=suite_name,
                jobs=jobs,
                on_result=on_result,
            ),
        )
        for p in values
    )
    return SweepReport(parameter="plan-noise", points=points)


Curve = tuple[str, str, Callable[[AgentSummary], float]]

CURVES: tuple[Curve, ...] = (
    (
        "Undoable faults healed without a page",
        "% of undoable scenarios",
        lambda s: 100 * s.healed_without_page_rate,
    ),
    ("Collateral drift", "fields left changed", lambda s: float(s.collateral_drift)),
    ("Harmful end states", "count", lambda s: float(s.harmful_end_states)),
)

_ROWS: tuple[tuple[str, Callable[[AgentSummary], str]], ...] = (
    ("healed without a page", lambda s: f"{100 * s.healed_without_page_rate:.1f} %"),
    ("undoable healed", lambda s: f"{100 * s.mitigated_rate_undoable:.1f} %"),
    ("pages", lambda s: str(s.pages)),
    ("collateral drift (fields / runs)", lambda s: f"{s.collateral_drift} / {s.runs_with_drift}"),
    ("harmful end states", lambda s: str(s.harmful_end_states)),
    ("TNR violations", lambda s: str(s.tnr_violations)),
    ("writes outside the ground truth", lambda s: str(s.writes_outside_truth)),
    ("plans replaced by the noise", lambda s: str(s.noisy_plans)),
    ("median time to heal", lambda s: "–" if s.median_ttm_s is None else f"{s.median_ttm_s:.0f} s"),
)


def render_sweep_markdown(sweep: SweepReport, *, chart: str | None = None) -> str:
    first = sweep.points[0][1] if sweep.points else None
    scenarios = len(next(iter(first.results.values()), ())) if first else 0
    values = ", ".join(f"{p:g}" for p, _ in sweep.points)
    lines = [
        "# Stratus bench — plan-noise sweep",
        "",
        f"Suite `{first.suite if first else ''}`: {scenarios} scenarios; agents "
        + ", ".join(f"`{a}`" for a in sweep.agents)
        + f"; seed {first.seed if first else ''}; plan noise P = {values}. At each P the "
        "planner's proposal is replaced, with probability P per plan asked for, by a plausible "
        'wrong one, the same way for every agent (`lab/scenarios/README.md`, "Plan noise").',
        "",
    ]
    if chart:
        lines += [f"![sweep]({chart})", ""]
    header = "| Figure | P | " + " | ".join(f"`{a}`" for a in sweep.agents) + " |"
    lines += [header, "|---|---:|" + "---:|" * len(sweep.agents)]
    for label, value in _ROWS:
        for p, report in sweep.points:
            cells = " | ".join(value(report.summaries[a]) for a in sweep.agents)
            lines.append(f"| {label} | {p:g} | {cells} |")
    lines.append("")
    for p, report in sweep.points:
        body = render_markdown(report, title=f"P = {p:g}")
        # One level down: each point's report is a section of the sweep's.
        lines += ["", *(f"#{line}" if line.startswith("#") else line for line in body.split("\n"))]
    return "\n".join(lines).rstrip("\n") + "\n"


def render_sweep_chart(sweep: SweepReport) -> bytes:
    """PNG bytes: one panel per curve, one line per agent, P on the x axis."""
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from lab.bench.chart import COLOURS, DPI, STYLE

    xs = [p for p, _ in sweep.points]
    with mpl.rc_context(STYLE):
        figure = Figure(figsize=(15.0, 4.8), dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots(1, len(CURVES))
        for ax, (title, unit, value) in zip(axes, CURVES, strict=True):
            for index, name in enumerate(sweep.agents):
                ys = [value(r.summaries[name]) for _, r in sweep.points]
                ax.plot(xs, ys, marker="o", label=name, color=COLOURS[index % len(COLOURS)])
            ax.set_title(title)
            ax.set_xlabel("plan noise P")
            ax.set_ylabel(unit)
            ax.set_xticks(xs)
        first = sweep.points[0][1] if sweep.points else None
        figure.suptitle(
            f"stratus bench sweep — {first.suite if first else ''}, seed "
            f"{first.seed if first else ''}",
            fontsize=12,
        )
        figure.legend(
            *axes[0].get_legend_handles_labels(),
            loc="outside lower center",
            ncols=max(1, len(sweep.agents)),
        )
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()
