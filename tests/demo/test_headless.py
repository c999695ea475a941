"""`stratus demo --headless`: one scenario to its end, a JSON summary, exit 0 at an end state —
committed and resolved where an undoable fix exists, escalated with no write where none does."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bot.cli.demo import demo


def run(tmp_path: Path, *args: str) -> tuple[int, dict[str, object], str]:
    out = tmp_path / "out.json"
    result = CliRunner().invoke(demo, ["--headless", "--auto-approve", "--json", str(out), *args])
    summary = json.loads(out.read_text()) if out.exists() else {}
    return result.exit_code, summary, result.output


def test_a_fixable_scenario_commits_resolves_and_undoes(tmp_path: Path) -> None:
    code, summary, output = run(tmp_path, "--scenario", "hotel-scale-to-zero-rate", "--undo")
    assert code == 0, output
    assert summary["scenario"] == "hotel-scale-to-zero-rate"
    assert summary["outcome"] == "resolved"
    diagnosis = summary["diagnosis"]
    assert isinstance(diagnosis, dict) and diagnosis["root_cause_service"] == "rate"
    assert diagnosis["category"] == "virtualization/operation_error"
    assert 0 < float(diagnosis["confidence"]) <= 1
    transaction = summary["transaction"]
    assert isinstance(transaction, dict) and transaction["status"] == "committed"
    assert float(transaction["mu_after"]) == 0.0 < float(transaction["mu_before"])
    plan = summary["plan"]
    assert isinstance(plan, dict) and any(
        "Scale Deployment/hotel-reservation/rate" in a for a in plan["actions"]
    )
    undo = summary["undo"]
    assert isinstance(undo, dict) and undo["status"] == "undone" and undo["restored"] == 1
    timings = summary["timings"]
    assert isinstance(timings, dict)
    assert 0 <= float(timings["detect_s"]) <= float(timings["mitigate_s"])


def test_without_a_scenario_the_demos_first_runs_and_its_undo_shows_the_fault_again(
    tmp_path: Path,
) -> None:
    code, summary, output = run(tmp_path, "--undo")
    assert code == 0, output
    assert "no --scenario given" in output
    assert summary["scenario"] == "hotel-wrong-target-port-geo"
    undo = summary["undo"]
    # Measured once lab time has passed after the undo: the restored fault shows again.
    assert isinstance(undo, dict) and undo["status"] == "undone"
    assert float(undo["mu_after"]) > 0.0 and undo["mu_after_s"] > 0


def test_two_concurrent_faults_are_fixed_in_one_transaction_listed_action_by_action(
    tmp_path: Path,
) -> None:
    code, summary, output = run(tmp_path, "--scenario", "shop-two-faults-flag-and-currency")
    assert code == 0, output
    assert summary["outcome"] == "resolved" and summary["mitigated"] is True
    assert summary["attempts"] == 1
    transaction = summary["transaction"]
    assert isinstance(transaction, dict) and transaction["status"] == "committed"
    plan = summary["plan"]
    assert isinstance(plan, dict)
    actions = plan["actions"]
    assert isinstance(actions, list) and len(actions) == 2, actions
    assert any("Deployment/online-shop/currency" in a for a in actions)
    assert any("ConfigMap/online-shop/flagd-config" in a for a in actions)


def test_an_unfixable_scenario_escalates_without_a_write(tmp_path: Path) -> None:
    code, summary, output = run(tmp_path, "--scenario", "hotel-revoked-credentials-mongodb-geo")
    assert code == 0, output
    assert summary["outcome"] == "escalated"
    assert summary["transaction"] is None and summary["plan"] == {"actions": []}
    diagnosis = summary["diagnosis"]
    assert isinstance(diagnosis, dict) and diagnosis["category"] == "application/authentication"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert (
        CliRunner().invoke(demo, ["--headless", "--scenario", "hotel-scale-to-zero-rate"]).exit_code
        == 2
    )
    unknown = CliRunner().invoke(demo, ["--headless", "--auto-approve", "--scenario", "nope"])
    assert unknown.exit_code == 2 and "no scenario 'nope'" in unknown.output
