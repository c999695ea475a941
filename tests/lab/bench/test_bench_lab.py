"""The bench on the real lab: the same seed gives the same scores (in this process, or forked
from a warmed-up world in a worker), every noise kind does what it says without opening an
incident, and `stratus bench` reports a broken scenario file (and a scenario that cannot run)
with file, field and reason while the others still run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from agents.adapters.anthropic_model import AnthropicModel
from bot.cli.bench import bench
from lab.bench import SUITE_DIR, BenchConfig, load_suite, parse_agents, run_bench, run_one
from lab.bench.chart import render_chart
from lab.bench.markdown import render_markdown
from tests.support.anthropic_standin import messages_standin, tool_use

CONTROL = """\
id: every-noise
app: online-shop
description: every kind of noise, no fault
faults: [{fault: no-fault}]
noise:
  - {kind: delete-pod, target: frontend, at: 5}
  - {kind: rollout-restart, target: recommendation, at: 10}
  - {kind: set-image, target: cart, tag: "2.0.3", at: 15}
  - {kind: warning-event, target: checkout, count: 3, at: 20}
  - {kind: cordon-node, node: lab-node-2, duration: 30, at: 25}
  - {kind: network-blip, target: currency, delay_ms: 30, duration: 20, at: 30}
  - {kind: scale, target: frontend, replicas: 3, at: 35}
  - {kind: config-edit, config_map: shop-config, key: BANNER_TEXT, value: "winter sale", at: 40}
time_limits: {total: 120}
"""

FAULT = """\
id: quick-fault
app: hotel-reservation
description: a quick one
faults: [{fault: wrong-binary, target: profile, at: 10}]
ground_truth: {root_causes: [profile], category: application/misconfiguration}
time_limits: {total: 400}
"""


@pytest.mark.timeout(1500)  # eight lab runs under coverage: 5 min on a slow day, more if loaded
def test_the_same_seed_gives_the_same_scores(tmp_path: Path) -> None:
    full = load_suite(SUITE_DIR)
    # A clean fix, and a naive run that writes on every reopened incident (many transactions,
    # TNR violations): the second is where any non-determinism would show.
    suite = replace(
        full,
        scenarios=tuple(
            s
            for s in full.scenarios
            if s.scenario.id in ("hotel-wrong-target-port-geo", "shop-misleading-release-cart")
        ),
    )
    agents = parse_agents("stratus,naive")
    config = BenchConfig(seed=11)
    first = run_bench(suite, agents, config)
    # In worker processes each run is forked from a world warmed up once: the same state.
    second = run_bench(suite, agents, config, jobs=2)
    for name in ("stratus", "naive"):
        for a, b in zip(first.results[name], second.results[name], strict=True):
            assert a.error is None, a.error
            assert a.scores() == b.scores()
        assert first.summaries[name] == second.summaries[name]
    naive = first.results["naive"][1]
    # The naive agent used to roll the harmless release back first and write again on the
    # reopened incident; it shares the planner, whose no-symptom gate (DESIGN rule 10) now
    # leaves the healthy release alone, so one transaction mitigates it.
    assert naive.attempts >= 1 and naive.mitigated, naive.outcome
    assert first.results["stratus"][0].detected and first.results["stratus"][0].attempts >= 1
    assert render_chart(first) == render_chart(second)


def test_every_noise_kind_acts_and_opens_no_incident(tmp_path: Path) -> None:
    (tmp_path / "every-noise.yaml").write_text(CONTROL, encoding="utf-8")
    [loaded] = load_suite(tmp_path).scenarios
    result = run_one(loaded, parse_agents("stratus")[0], BenchConfig(seed=3))
    assert result.error is None, result.error
    text = "\n".join(result.events)
    for what in (
        "deleted (kubectl delete pod)",
        "rollout restart",
        "cart:2.0.3 (kubectl set image)",
        "Warning Unhealthy on Pod/checkout",
        "Node/lab-node-2 cordoned",
        "network into currency: +30 ms",
        "Deployment/frontend: spec.replicas 2 → 3 (kubectl scale)",
        "ConfigMap/shop-config: data.BANNER_TEXT None → 'winter sale'",
    ):
        assert what in text, text
    assert result.mitigated and result.incidents == 0 and result.actions == 0
    assert result.lab_s == 120.0


@pytest.mark.parametrize(
    ("step", "why"),
    [
        ("{kind: scale, target: frontend, replicas: 1, at: 5}", "lowers capacity"),
        (
            "{kind: config-edit, config_map: shop-config, key: CART_ADDR, value: x, at: 5}",
            "read by Deployment/",
        ),
    ],
)
def test_noise_that_could_do_harm_is_a_scenario_error(tmp_path: Path, step: str, why: str) -> None:
    head = CONTROL.split("noise:", maxsplit=1)[0]
    text = (
        f"{head}noise:\n  - {{kind: scale, target: frontend, replicas: 2, at: 1}}\n"
        f"  - {step}\ntime_limits: {{total: 30}}\n"
    )
    (tmp_path / "harm.yaml").write_text(text, encoding="utf-8")
    [loaded] = load_suite(tmp_path).scenarios
    result = run_one(loaded, parse_agents("stratus")[0], BenchConfig(seed=3))
    assert result.scenario_error and why in (result.error or ""), result.error


def test_the_cli_reports_broken_scenarios_runs_the_rest_and_exits_non_zero(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "quick-fault.yaml").write_text(FAULT, encoding="utf-8")
    (suite / "typo.yaml").write_text(
        FAULT.replace("quick-fault", "typo").replace("target: profile", "target: profle"),
        encoding="utf-8",
    )
    (suite / "bad-tag.yaml").write_text(
        CONTROL.replace("every-noise", "bad-tag").replace('tag: "2.0.3"', 'tag: "9.9.9"'),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench,
        [
            "--suite",
            str(suite),
            "--agents",
            "stratus",
            "--seed",
            "5",
            "--reasoner",
            "offline",
            "--json",
            str(out / "r.json"),
            "--markdown",
            str(out / "r.md"),
            "--chart",
            str(out / "r.png"),
        ],
    )
    assert result.exit_code == 1, result.output
    stderr = result.stderr
    assert f"{suite / 'typo.yaml'}:4: faults.0.target: 'profle' is not a service" in stderr
    assert (
        "bad-tag: noise set-image ghcr.io/lab/shop/cart:9.9.9: the registry does not have it"
        in stderr
    )
    assert "[1/2] bad-tag · stratus: scenario error" in stderr
    assert "[2/2] quick-fault · stratus: mitigated" in stderr

    report = json.loads((out / "r.json").read_text(encoding="utf-8"))
    agent = report["agents"]["stratus"]
    for key in (
        "detection_accuracy",
        "false_positive_incidents",
        "localization_acc1",
        "localization_acc3",
        "category_accuracy",
        "mitigation_success_rate",
        "median_ttm_s",
        "tnr_violations",
        "harmful_end_states",
        "escalations",
        "rollbacks",
    ):
        assert key in agent["summary"], key
    assert agent["summary"]["scenarios"] == 1  # the scenario error is left out of the scores
    rows = {row["id"]: row for row in agent["scenarios"]}
    for key in (
        "id",
        "detected",
        "localized_acc1",
        "category_correct",
        "mitigated",
        "ttd_s",
        "ttm_s",
        "attempts",
        "actions",
        "rollbacks",
        "tnr_violations",
        "escalated",
        "tokens",
    ):
        assert key in rows["quick-fault"], key
    assert rows["quick-fault"]["mitigated"] is True
    assert rows["bad-tag"]["error_kind"] == "scenario"

    markdown = (out / "r.md").read_text(encoding="utf-8")
    assert "| Localisation Acc@1 |" in markdown and "54.55 %" in markdown and "11.43 %" in markdown
    assert "not comparable head to head" in markdown and "## Scenario errors" in markdown
    assert (out / "r.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_an_unknown_agent_is_a_usage_error() -> None:
    result = CliRunner().invoke(bench, ["--agents", "stratus,clever"])
    assert result.exit_code == 2 and "unknown agent 'clever'" in result.output


@pytest.mark.parametrize("agents", ["no-undo", "no-retry"])
def test_the_ablations_run_end_to_end(agents: str) -> None:
    suite = load_suite(SUITE_DIR).select("hotel-wrong-target-port-geo")
    report = run_bench(suite, parse_agents(agents), BenchConfig(seed=7))
    [result] = report.results[agents]
    assert result.error is None and result.detected
    assert "| Figure |" in render_markdown(report)


def test_an_unknown_scenario_id_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "quick-fault.yaml").write_text(FAULT, encoding="utf-8")
    result = CliRunner().invoke(
        bench, ["--suite", str(tmp_path), "--scenario", "nope", "--reasoner", "offline"]
    )
    assert result.exit_code == 2 and "no scenario 'nope'" in result.output


GEO_ANSWER = {
    "root_cause": {
        "service": "geo",
        "category": "virtualization/misconfiguration",
        "confidence": 0.9,
        "explanation": "Service geo targets a port where nothing listens; search is refused.",
        "evidence": [0],
    },
    "alternatives": [],
    "summary": "geo's Service points at the wrong port.",
}


def test_the_bench_takes_a_language_model() -> None:
    suite = load_suite(SUITE_DIR).select("hotel-wrong-target-port-geo")
    with messages_standin(*[tool_use("submit_diagnosis", GEO_ANSWER)] * 80) as server:
        model = AnthropicModel(
            api_key="sk-ant-test-key-000000",
            base_url=server.base_url,
            timeout_s=5.0,
            max_retries=0,
        )
        try:
            report = run_bench(suite, parse_agents("stratus"), BenchConfig(seed=7), model=model)
        finally:
            model.close()
        assert server.requests, "the model was asked"
    assert report.reasoner == f"claude:{model.name}"
    [result] = report.results["stratus"]
    assert result.error is None, result.error
    assert result.tokens > 0 and result.localized_acc1 and result.mitigated


def test_the_claude_reasoner_needs_a_key() -> None:
    result = CliRunner(env={"ANTHROPIC_API_KEY": ""}).invoke(
        bench, ["--reasoner", "claude", "--scenario", "hotel-wrong-target-port-geo"]
    )
    assert result.exit_code == 2 and "needs ANTHROPIC_API_KEY" in result.output
