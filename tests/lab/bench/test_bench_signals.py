"""`stratus bench --signals`: a scenario run end to end with the lab's telemetry read as Istio
exposes it mitigates as it does under the lab's names, and the report says which profile the
run read."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from agents.adapters.signal_profiles import PROFILES
from bot.cli.bench import bench
from lab.alerts import attach_alerts
from lab.sim.world import LabWorld, WorldConfig


def test_a_bench_run_under_istio_mitigates_and_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        bench,
        [
            "--scenario",
            "hotel-wrong-target-port-geo",
            "--agents",
            "stratus",
            "--reasoner",
            "offline",
            "--signals",
            "istio",
            "--json",
            str(tmp_path / "r.json"),
            "--markdown",
            str(tmp_path / "r.md"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "signal profile istio" in result.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["signals"] == "istio" and report["settings"]["signals"] == "istio"
    [run] = report["agents"]["stratus"]["scenarios"]
    assert run["error"] is None, run["error"]
    assert run["detected"] and run["localized_acc1"] and run["mitigated"], run["outcome"]
    assert "signal profile `istio`" in (tmp_path / "r.md").read_text(encoding="utf-8")


def test_an_unknown_profile_is_a_usage_error() -> None:
    result = CliRunner().invoke(bench, ["--signals", "datadog"])
    assert result.exit_code == 2 and "datadog" in result.output


def test_the_world_and_its_alerts_read_with_the_profile_its_config_names() -> None:
    world = LabWorld(WorldConfig(apps=("hotel-reservation",), signals="istio"))
    assert world.metrics.profile is PROFILES["istio"]
    assert attach_alerts(world).metrics.profile is PROFILES["istio"]
    assert LabWorld(WorldConfig(apps=("hotel-reservation",))).metrics.profile is PROFILES["lab"]
