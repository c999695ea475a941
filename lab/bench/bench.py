"""Running a suite: every (scenario, agent) pair on a fresh lab, optionally in worker processes,
into one `BenchReport`.

Each run is independent (its own stepped world, seed, SQLite file, brain), so running them in
parallel changes nothing but the wall time; results are put back in suite order before they are
summarised. A run that cannot be scored because the scenario is wrong is a scenario error (the
CLI exits non-zero); a run that crashed is scored as a failure and its traceback logged.
"""

from __future__ import annotations

import logging
import multiprocessing
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path

from agents.diagnosis import LanguageModel
from lab.bench import counterfactual
from lab.bench.agents import AgentSpec
from lab.bench.errors import BenchError, ScenarioRunError
from lab.bench.facts import RunFacts
from lab.bench.results import BenchReport, RunResult
from lab.bench.runner import Runner
from lab.bench.score import check_truth, errored, score_run
from lab.bench.session import BenchConfig, Session
from lab.bench.suite import LoadedScenario, Suite
from lab.bench.summary import summarize

logger = logging.getLogger(__name__)

#: Called as each run finishes: the result, how many are done, how many there are.
OnResult = Callable[[RunResult, int, int], None]


def run_one(
    loaded: LoadedScenario,
    agent: AgentSpec,
    config: BenchConfig,
    *,
    model: LanguageModel | None = None,
    workdir: Path | None = None,
) -> RunResult:
    """One scenario for one agent on a fresh lab; never raises for a failing run."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="stratus-bench-") as tmp:
        where = workdir or Path(tmp)
        try:
            with Session.open(
                app=loaded.scenario.app,
                agent=agent,
                config=config,
                workdir=where,
                model=model,
                scenario=loaded.scenario.id,
            ) as session:
                facts = Runner(session, loaded, config).run()
            check_truth(loaded, facts)
            without = _without_agent(loaded, agent, config, where / "without-agent", facts)
            return score_run(
                loaded, agent.name, facts, wall_s=time.monotonic() - started, without=without
            )
        except ScenarioRunError as e:
            return errored(
                loaded, agent.name, error=str(e), kind="scenario", wall_s=time.monotonic() - started
            )
        except Exception as e:  # one run's outer boundary: log it, score it as a crash
            logger.exception("bench run %s/%s crashed", loaded.scenario.id, agent.name)
            return errored(
                loaded,
                agent.name,
                error=f"{type(e).__name__}: {e}",
                kind="crash",
                wall_s=time.monotonic() - started,
            )


def _without_agent(
    loaded: LoadedScenario, agent: AgentSpec, config: BenchConfig, workdir: Path, facts: RunFacts
) -> dict[float, float]:
    """μ in the run without the agent, at the times the run's TNR figures ask about (and no
    run at all when they ask about none: most runs)."""
    times = counterfactual.times_in_question(facts)
    if not times:
        return {}
    workdir.mkdir(parents=True, exist_ok=True)
    with Session.open(
        app=loaded.scenario.app,
        agent=agent,
        config=config,
        workdir=workdir,
        scenario=loaded.scenario.id,
    ) as session:
        return Runner(session, loaded, config).without_agent(times)


def run_bench(
    suite: Suite,
    agents: Sequence[AgentSpec],
    config: BenchConfig,
    *,
    suite_name: str = "",
    model: LanguageModel | None = None,
    jobs: int = 1,
    on_result: OnResult | None = None,
) -> BenchReport:
    """Every scenario of `suite` for every agent. `jobs` > 1 runs them in that many worker
    processes (not with a `model`: a live API client does not cross processes)."""
    if jobs > 1 and model is not None:
        raise BenchError("a language model cannot be shared with worker processes; use jobs=1")
    started = time.monotonic()
    pairs = [(s, a) for s in suite.scenarios for a in agents]
    results: dict[tuple[str, str], RunResult] = {}
    done = 0

    def finished(result: RunResult) -> None:
        nonlocal done
        done += 1
        results[(result.id, result.agent)] = result
        if on_result is not None:
            on_result(result, done, len(pairs))

    if jobs <= 1:
        for loaded, agent in pairs:
            finished(run_one(loaded, agent, config, model=model))
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures: list[Future[RunResult]] = [
                pool.submit(run_one, loaded, agent, config) for loaded, agent in pairs
            ]
            for future in as_completed(futures):
                finished(future.result())

    by_agent = {
        a.name: tuple(results[(s.scenario.id, a.name)] for s in suite.scenarios) for a in agents
    }
    errors = [str(e) for e in suite.errors]
    for loaded in suite.scenarios:
        reasons = sorted(
            {
                r.error or ""
                for a in agents
                if (r := results[(loaded.scenario.id, a.name)]).scenario_error
            }
        )
        errors.extend(f"{loaded.file}: {loaded.scenario.id}: {reason}" for reason in reasons)
    return BenchReport(
        suite=suite_name,
        seed=config.seed,
        reasoner=f"claude:{model.name}" if model is not None else "offline",
        agents=tuple(a.name for a in agents),
        summaries={a.name: summarize(a.name, a.description, by_agent[a.name]) for a in agents},
        results=by_agent,
        scenario_errors=tuple(errors),
        wall_s=time.monotonic() - started,
        evidence_token_budget=config.evidence_token_budget,
        settings={**asdict(config), "jobs": jobs},
        signals=config.signals,
    )
