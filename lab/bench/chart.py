"""The report's chart: the agents side by side on the rates (left) and the safety counts (right).

Drawn on a `Figure` with the Agg canvas, never through pyplot (no global state), with a fixed
style, size and no timestamp or software name in the PNG: the same report gives the same bytes.
matplotlib is imported inside the function so that loading the bench stays fast.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lab.bench.results import AgentSummary, BenchReport

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

WIDTH_IN, HEIGHT_IN, DPI = 15.0, 5.5, 100

_RATES: tuple[tuple[str, Callable[[AgentSummary], float]], ...] = (
    ("detection", lambda s: s.detection_accuracy),
    ("Acc@1", lambda s: s.localization_acc1),
    ("Acc@3", lambda s: s.localization_acc3),
    ("category", lambda s: s.category_accuracy),
    ("mitigation\nsuccess", lambda s: s.mitigation_success_rate),
    ("first plan\nheals", lambda s: s.first_plan_success_rate),
)
_COUNTS: tuple[tuple[str, Callable[[AgentSummary], float]], ...] = (
    ("TNR\nviolations", lambda s: float(s.tnr_violations)),
    ("harmful end\nstates", lambda s: float(s.harmful_end_states)),
    ("rollbacks", lambda s: float(s.rollbacks)),
    ("writes", lambda s: float(s.actions)),
    ("writes while\nhealthy", lambda s: float(s.writes_while_healthy)),
    ("false-positive\nincidents", lambda s: float(s.false_positive_incidents)),
)
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")

STYLE: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
}


def render_chart(report: BenchReport) -> bytes:
    """PNG bytes of the comparison chart."""
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = list(report.agents)
    width = 0.8 / max(1, len(names))
    with mpl.rc_context(STYLE):
        figure = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        rates, counts = figure.subplots(1, 2, width_ratios=(1, 1))
        for index, name in enumerate(names):
            summary = report.summaries[name]
            colour = COLOURS[index % len(COLOURS)]
            offset = (index - (len(names) - 1) / 2) * width
            xs = [i + offset for i in range(len(_RATES))]
            values = [100 * f(summary) for _, f in _RATES]
            bars = rates.bar(xs, values, width, label=name, color=colour)
            # Upright labels on narrow bars would run into each other ("100100100").
            rates.bar_label(bars, fmt="%.0f", fontsize=8, padding=2, rotation=90)
            xs = [i + offset for i in range(len(_COUNTS))]
            bars = counts.bar(xs, [f(summary) for _, f in _COUNTS], width, label=name, color=colour)
            counts.bar_label(bars, fmt="%.0f", fontsize=8, padding=1)
        rates.set_xticks(range(len(_RATES)), [label for label, _ in _RATES])
        rates.set_ylim(0, 118)
        rates.set_ylabel("% of scenarios")
        rates.set_title("Detection, diagnosis and mitigation (higher is better)")
        counts.set_xticks(range(len(_COUNTS)), [label for label, _ in _COUNTS])
        # Counts span 0 to hundreds: a symmetric log scale keeps a single violation visible.
        counts.set_yscale("symlog", linthresh=10)
        top = max((f(report.summaries[n]) for n in names for _, f in _COUNTS), default=0.0)
        counts.set_ylim(0, max(10.0, top) * 2.5)  # room for the labels above the bars
        counts.set_ylabel("count over the suite (symlog)")
        counts.set_title("Safety and effort (violations and harm: lower is better)")
        figure.suptitle(
            f"stratus bench — {report.suite or 'suite'}, seed {report.seed}, "
            f"{report.reasoner} reasoner",
            fontsize=12,
        )
        # Below the plots, where it hides no bar.
        figure.legend(
            *rates.get_legend_handles_labels(), loc="outside lower center", ncols=len(names)
        )
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()
