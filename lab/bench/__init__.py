"""`stratus bench`: incident scenarios run end to end on the lab, scored for Stratus and the
baselines it must beat (AIOpsLab/ITBench style).

    from lab.bench import load_suite, parse_agents, run_bench, BenchConfig

    suite = load_suite(Path("lab/scenarios"))
    report = run_bench(suite, parse_agents("stratus,naive"), BenchConfig(seed=7))
    report.to_json()                      # the --json report
    render_markdown(report)               # the --markdown table

The scenario format is `lab.bench.scenario` (documented in `lab/scenarios/README.md`), the
agents `lab.bench.agents`, one run `lab.bench.runner`, scoring `lab.bench.score`, summaries
`lab.bench.summary`.
"""

from lab.bench.agents import AGENTS, DEFAULT_AGENTS, AgentSpec, parse_agents
from lab.bench.bench import run_bench, run_one
from lab.bench.errors import BenchError, ScenarioRunError, UnknownAgent
from lab.bench.results import AgentSummary, BenchReport, RunResult
from lab.bench.scenario import Expect, Scenario
from lab.bench.session import BENCH_LIMITS, BenchConfig
from lab.bench.suite import (
    SUITE_DIR,
    LoadedScenario,
    ScenarioError,
    Suite,
    load_scenario,
    load_suite,
)

__all__ = [
    "AGENTS",
    "BENCH_LIMITS",
    "DEFAULT_AGENTS",
    "SUITE_DIR",
    "AgentSpec",
    "AgentSummary",
    "BenchConfig",
    "BenchError",
    "BenchReport",
    "Expect",
    "LoadedScenario",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "ScenarioRunError",
    "Suite",
    "UnknownAgent",
    "load_scenario",
    "load_suite",
    "parse_agents",
    "run_bench",
    "run_one",
]
