"""Charts for Slack: the affected signals of an incident, and the digest's figures.

Slack shows images, not plots, so every chart is PNG bytes ready for `files_upload_v2`. They are
drawn on a `Figure` with the Agg canvas directly, never through `pyplot`: pyplot keeps global
state (a current figure, a backend chosen at import) that is neither thread-safe nor wanted in
a bot that renders from Bolt's worker threads and the scheduler at once. matplotlib is imported
inside the functions so that `stratus --help` and modules that never draw stay fast — and so
that the bot, which asks for charts through `bot.chart_process`, never loads it: these
functions run in the chart worker's child process (`bot.chart_worker`), or in-process in tests.

The output is deterministic for the same input — fixed size and DPI, fixed style, no
timestamp or software name in the PNG metadata — so a chart can be compared across runs.
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from agents.model import Series

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

logger = logging.getLogger(__name__)

#: Pixel size of every chart: 1200 × 600 (12 × 6 inches at 100 DPI), readable in a Slack preview.
WIDTH_IN, HEIGHT_IN, DPI = 12.0, 6.0, 100

#: Series drawn at most; more would make an unreadable legend (the caller picks the worst).
MAX_SERIES = 8


class MarkerKind(StrEnum):
    DETECTION = "detection"
    APPROVAL = "approval"
    COMMIT = "commit"
    ABORT = "abort"
    UNDO = "undo"


_MARKER_COLOURS = {
    MarkerKind.DETECTION: "#d62728",  # red: it broke here
    MarkerKind.APPROVAL: "#1f77b4",
    MarkerKind.COMMIT: "#2ca02c",
    MarkerKind.ABORT: "#ff7f0e",
    MarkerKind.UNDO: "#9467bd",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Marker:
    """A moment of the incident drawn as a vertical line over the signals."""

    at: datetime
    label: str
    kind: MarkerKind


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceFigures:
    """One namespace's bar in the digest chart. Times are seconds; None when unknown."""

    namespace: str
    opened: int
    resolved: int
    mttd_s: float | None = None
    mttm_s: float | None = None


# A fixed style, independent of the user's matplotlibrc and of anything another module set.
_STYLE: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 11,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "timezone": "UTC",
}


#: `rc_context` swaps matplotlib's global rcParams: two charts drawn at once from two threads
#: would restore each other's settings half-way. One chart at a time (each takes ~0.1 s).
_DRAWING = threading.Lock()


@contextmanager
def _figure() -> Iterator[Figure]:
    import matplotlib as mpl
    from matplotlib.figure import Figure

    with _DRAWING, mpl.rc_context(_STYLE):
        yield Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, layout="constrained")


def _png(figure: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    # metadata: no "Software" (matplotlib's version) and no creation time in the file.
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def _series_label(series: Series) -> str:
    if not series.labels:
        return series.name
    shown = ", ".join(f"{k}={v}" for k, v in sorted(series.labels.items()))
    return f"{series.name} ({shown})"


def _no_data(axes: Axes, text: str) -> None:
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes, color="#777777")
    axes.set_xticks([])
    axes.set_yticks([])


def _date_number(at: datetime) -> float:
    """matplotlib's date number of `at` (a naive time is taken as UTC)."""
    from matplotlib.dates import date2num

    aware = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return float(date2num(aware))  # type: ignore[no-untyped-call]  # untyped in matplotlib


def _time_axis(axes: Axes) -> None:
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    # matplotlib.dates ships without annotations.
    locator = AutoDateLocator(tz=UTC)  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]


def render_signal_chart(
    series: Sequence[Series],
    *,
    title: str,
    markers: Sequence[Marker] = (),
    unit: str = "",
) -> bytes:
    """A line per series over time, with the incident's moments as labelled vertical lines.
    Empty series are skipped; with nothing to draw the chart says so instead of failing."""
    drawn = [s for s in series if s.points][:MAX_SERIES]
    with _figure() as figure:
        axes = figure.add_subplot()
        axes.set_title(title, loc="left")
        if not drawn:
            _no_data(axes, "no data for this period")
            return _png(figure)
        for line in drawn:
            axes.plot(
                [_date_number(p.at) for p in line.points],
                [p.value for p in line.points],
                label=_series_label(line),
                linewidth=1.8,
            )
        _time_axis(axes)
        if unit:
            axes.set_ylabel(unit)
        axes.set_ylim(bottom=min(0.0, *(p.value for s in drawn for p in s.points)))
        for marker in sorted(markers, key=lambda m: m.at):
            colour = _MARKER_COLOURS[marker.kind]
            at = _date_number(marker.at)
            axes.axvline(at, color=colour, linestyle="--", linewidth=1.2)
            axes.annotate(
                marker.label,
                xy=(at, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(3, -4),
                textcoords="offset points",
                rotation=90,
                va="top",
                ha="left",
                fontsize=9,
                color=colour,
            )
        axes.legend(loc="upper left", fontsize=9, framealpha=0.8)
        return _png(figure)


def render_digest_chart(rows: Sequence[NamespaceFigures], *, title: str) -> bytes:
    """Two panels: incidents opened and resolved per namespace; mean time to detect and to
    mitigate per namespace, in minutes."""
    import numpy as np

    with _figure() as figure:
        figure.suptitle(title, x=0.01, ha="left")
        counts, times = figure.subplots(1, 2)
        if not rows:
            _no_data(counts, "no incidents in this period")
            _no_data(times, "no incidents in this period")
            return _png(figure)
        names = [r.namespace for r in rows]
        x = np.arange(len(rows), dtype=float)
        width = 0.38
        counts.bar(x - width / 2, [r.opened for r in rows], width, label="opened", color="#d62728")
        counts.bar(
            x + width / 2, [r.resolved for r in rows], width, label="resolved", color="#2ca02c"
        )
        counts.set_title("Incidents", loc="left")
        counts.grid(axis="x", visible=False)
        counts.set_xticks(x, names, rotation=20, ha="right")
        counts.yaxis.get_major_locator().set_params(integer=True)
        counts.legend(loc="upper right", fontsize=9)

        def minutes(value: float | None) -> float:
            return value / 60.0 if value is not None else 0.0

        times.bar(x - width / 2, [minutes(r.mttd_s) for r in rows], width, label="time to detect")
        times.bar(x + width / 2, [minutes(r.mttm_s) for r in rows], width, label="time to mitigate")
        times.set_title("Mean times (minutes)", loc="left")
        times.grid(axis="x", visible=False)
        times.set_xticks(x, names, rotation=20, ha="right")
        times.legend(loc="upper right", fontsize=9)
        return _png(figure)
