"""Running a suite: every (scenario, agent) pair on a fresh lab, optionally in worker processes,
into one `BenchReport`.

Each run is independent (its own stepped world, seed, SQLite file, brain), so running them in
parallel changes nothing but the wall time; results are put back in suite order before they are
summarised. A worker process warms each app's world up once and forks every run from it
(`run_forked`): the warm-up's state depends on the app, the seed and the signals only. A run
that cannot be scored because the scenario is wrong is a scenario error (the CLI exits
non-zero); a run that crashed is scored as a failure and its traceback logged.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
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
from lab.bench.session import BenchConfig, Session, warmed_world
from lab.bench.suite import LoadedScenario, Suite
from lab.bench.summary import summarize
from lab.sim.world import LabWorld

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
    world: LabWorld | None = None,
) -> RunResult:
    """One scenario for one agent on a fresh lab (`world`: a warmed-up one this run may use
    up); never raises for a failing run."""
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
                world=world,
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


#: A worker process's warmed-up worlds, by what decides their state (`warmed_world`).
_WARM: dict[tuple[str, int, str, float, float], LabWorld] = {}


def run_forked(loaded: LoadedScenario, agent: AgentSpec, config: BenchConfig) -> RunResult:
    """`run_one` in a process forked from this worker's warmed-up world of the app: the warm-up
    (a fifth of a run) is done once per app and worker instead of once per run, and the run
    starts from the very state a fresh warm-up reaches (the warm-up depends on the app, the
    seed and the signals only; a forked child owns a copy and nothing flows back). Only in a
    worker process, which has no other thread to lose at the fork."""
    started = time.monotonic()
    app = loaded.scenario.app
    key = (app, config.seed, config.signals, config.warmup_s, config.warmup_tick_s)
    try:
        world = _WARM.get(key) or _WARM.setdefault(key, warmed_world(app, config))
    except Exception as e:  # the worker's boundary: score the run as a crash
        logger.exception("warm-up of %s failed", app)
        return errored(
            loaded,
            agent.name,
            error=f"warm-up: {e}",
            kind="crash",
            wall_s=time.monotonic() - started,
        )
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run on its copy, hand the result back, leave at once
        os.close(read)
        code = 1
        try:
            ran = run_one(loaded, agent, config, world=world)
            with os.fdopen(write, "wb") as out:
                out.write(pickle.dumps(ran))
            code = 0
        finally:
            logging.shutdown()
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as source:
        data = source.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        return errored(
            loaded,
            agent.name,
            error=f"the run's process ended without a result (wait status {status})",
            kind="crash",
            wall_s=time.monotonic() - started,
        )
    result: RunResult = pickle.loads(data)  # noqa: S301 (our own child, through a pipe)
    return result


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
        # Spawned workers start with one thread, so each can fork its runs from a warmed-up
        # world (`run_forked`); where there is no fork, each run warms up its own.
        context = multiprocessing.get_context("spawn")
        run = run_forked if hasattr(os, "fork") else run_one
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures: list[Future[RunResult]] = [
                pool.submit(run, loaded, agent, config) for loaded, agent in pairs
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
