"""The plan-noise sweep: its argument, and one report (Markdown with the new columns, JSON,
a deterministic chart) from one `BenchReport` per point, built by hand."""

from __future__ import annotations

import pytest

from lab.bench.errors import BenchError
from lab.bench.results import BenchReport, RunResult
from lab.bench.summary import summarize
from lab.bench.sweep import (
    SweepReport,
    parse_sweep,
    render_sweep_chart,
    render_sweep_markdown,
)


def test_parse_sweep() -> None:
    assert parse_sweep("plan-noise=0.4,0,0.2") == (0.0, 0.2, 0.4)
    for bad in ("plan-noise", "seed=1,2", "plan-noise=0,1.5", "plan-noise=a"):
        with pytest.raises(BenchError):
            parse_sweep(bad)


def _report(p: float, *, healed: bool, drift: tuple[str, ...]) -> BenchReport:
    runs = {
        agent: (
            RunResult(
                id="sc",
                agent=agent,
                app="hotel-reservation",
                expect="mitigated",
                mitigated=True,
                healed_without_page=healed if agent == "stratus" else False,
                pages=0 if agent == "stratus" else 1,
                collateral_drift=() if agent == "stratus" else drift,
                plan_noise=("plan 1: a → wrong action: b",) if p else (),
            ),
        )
        for agent in ("stratus", "naive")
    }
    return BenchReport(
        suite="lab/scenarios",
        seed=7,
        reasoner="offline",
        agents=("stratus", "naive"),
        summaries={a: summarize(a, a, r) for a, r in runs.items()},
        results=runs,
        scenario_errors=(),
        wall_s=1.0,
        evidence_token_budget=24_000,
        settings={"plan_noise": p},
    )


def _sweep() -> SweepReport:
    return SweepReport(
        parameter="plan-noise",
        points=(
            (0.0, _report(0.0, healed=True, drift=())),
            (0.4, _report(0.4, healed=True, drift=("Deployment/x spec.replicas: 1 → 3",))),
        ),
    )


def test_the_sweep_report_has_the_new_columns_per_point() -> None:
    text = render_sweep_markdown(_sweep(), chart="sweep.png")
    assert "![sweep](sweep.png)" in text
    assert "| healed without a page | 0.4 | 100.0 % | 0.0 % |" in text
    assert "| collateral drift (fields / runs) | 0.4 | 0 / 0 | 1 / 1 |" in text
    assert "| pages | 0 | 0 | 1 |" in text
    assert "## P = 0.4" in text and "### Summary" in text
    assert "Undoable faults healed without a page" in text
    assert "drift: Deployment/x spec.replicas: 1 → 3" in text
    data = _sweep().to_json()
    assert [p["value"] for p in data["points"]] == [0.0, 0.4]
    summary = data["points"][1]["report"]["agents"]["naive"]["summary"]
    assert (summary["collateral_drift"], summary["pages"]) == (1, 1)


def test_the_sweep_chart_is_a_deterministic_png() -> None:
    png = render_sweep_chart(_sweep())
    assert png.startswith(b"\x89PNG") and png == render_sweep_chart(_sweep())
