"""Plan noise on the real lab: the same seed gives the same noisy run, and `--sweep` writes one
report with the new columns and its chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.bench import bench
from lab.bench import SUITE_DIR, BenchConfig, load_scenario, parse_agents, run_one
from tests.lab.bench.test_bench_lab import FAULT


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "quick-fault.yaml").write_text(FAULT, encoding="utf-8")
    return suite


@pytest.mark.timeout(900)
def test_the_same_seed_gives_the_same_noisy_run(tmp_path: Path) -> None:
    loaded, errors = load_scenario(_suite(tmp_path) / "quick-fault.yaml")
    assert loaded is not None and not errors
    (agent,) = parse_agents("stratus")
    config = BenchConfig(seed=3, plan_noise=1.0)
    first = run_one(loaded, agent, config)
    second = run_one(loaded, agent, config)
    assert first.error is None, first.error
    assert first.scores() == second.scores()
    # Every plan asked for was drawn wrong: the first one was replaced (a wrong plan exists
    # for a rollback: another action on the failing path), and the report says how.
    assert first.plan_noise and "→" in first.plan_noise[0], first.plan_noise


@pytest.mark.timeout(900)
def test_the_sweep_writes_one_report_with_the_new_columns(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench,
        [
            "--suite",
            str(_suite(tmp_path)),
            "--agents",
            "stratus",
            "--seed",
            "3",
            "--reasoner",
            "offline",
            "--sweep",
            "plan-noise=0,1",
            "--json",
            str(out / "s.json"),
            "--markdown",
            str(out / "s.md"),
            "--chart",
            str(out / "s.png"),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "s.json").read_text(encoding="utf-8"))
    assert [p["value"] for p in data["points"]] == [0.0, 1.0]
    noisy = data["points"][1]["report"]["agents"]["stratus"]["scenarios"][0]
    assert noisy["plan_noise"] and "collateral_drift" in noisy and "pages" in noisy
    clean = data["points"][0]["report"]["agents"]["stratus"]["scenarios"][0]
    assert clean["plan_noise"] == []
    text = (out / "s.md").read_text(encoding="utf-8")
    assert "| healed without a page | 1 |" in text and "![sweep](s.png)" in text
    assert (out / "s.png").read_bytes().startswith(b"\x89PNG")
    assert "P=1 stratus: healed without a page" in result.output


@pytest.mark.timeout(900)
def test_a_wrong_plan_rolled_back_while_the_fault_spreads_to_callers_is_retried_not_paged() -> None:
    """cart crash-loops (memory limit 48Mi) and its failure spreads up to checkout and
    frontend. The noise swaps the right plan for a scale-out of cart; validation sees no
    progress and rolls it back, every object restored. By then μ is above μ_before, but only
    on cart and the services that call it: that is the fault's own course, so the incident goes
    on to its next attempt (which fixes the limit) instead of paging a person."""
    loaded, errors = load_scenario(SUITE_DIR / "shop-misleading-release-cart.yaml")
    assert loaded is not None and not errors
    (agent,) = parse_agents("stratus")
    run = run_one(loaded, agent, BenchConfig(seed=7, plan_noise=0.4))
    assert run.error is None, run.error
    # The seed's draw this test is about: the first plan replaced by a scale-out of cart.
    assert (
        run.plan_noise and "wrong action: Scale Deployment/online-shop/cart" in (run.plan_noise[0])
    ), run.plan_noise
    assert run.plans[0].startswith("aborted: Scale"), run.plans
    assert run.plans[1].startswith("committed: Set resources"), run.plans
    assert run.mitigated and run.pages == 0 and run.healed_without_page, run.outcome
    assert not run.collateral_drift


@pytest.mark.timeout(900)
def test_a_rollback_while_the_fault_spreads_is_the_faults_course_not_a_violation() -> None:
    # The noise's scale-out of a crash-looping cart is rolled back completely while the crash
    # spreads to its callers: μ is above μ0 at the rollback's end. The run without the agent
    # (same seed, same faults, nothing written) measures as much at the same lab second.
    loaded, errors = load_scenario(SUITE_DIR / "shop-misleading-release-cart.yaml")
    assert loaded is not None and not errors
    (agent,) = parse_agents("stratus")
    result = run_one(loaded, agent, BenchConfig(seed=7, plan_noise=0.4))
    assert result.error is None, result.error
    assert result.plans[0].startswith("aborted: Scale Deployment/online-shop/cart"), result.plans
    assert result.tnr_violations == 0, result.tnr_details
    [course] = result.tnr_fault_course
    assert course.startswith("transaction 1 (Scale Deployment/online-shop/cart from 1 to 2)")
    assert "in the run without the agent" in course
