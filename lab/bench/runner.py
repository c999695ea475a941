"""Running one scenario for one agent: inject the faults and the noise at their lab times, step
the headless loop, watch the oracle, and gather the facts.

Everything happens on the stepped lab clock, in this thread: faults and noise fire from the
run's own timers on the clock's tick (so they land at their time even while a transaction's
validation is moving the clock), the oracle is sampled from the same tick every few lab
seconds, and the loop is stepped every `step_s`. With the same seed a run does the same thing
every time. What the run left behind is read back by `lab.bench.records`.

When the run ends:
* a control (`no-incident`) runs its whole `time_limits.total`;
* otherwise, once every fault and noise step has happened and some incident has opened, the
  run goes on until no incident is open, then observes `observe_s` more (does the fix hold,
  do more incidents open) — or ends at `time_limits.total`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from agents.errors import ClusterError, StratusError
from agents.incident.events import IncidentEvent, TransactionFinished
from agents.model import IncidentState
from lab.bench.chaos import plan_outages, unmeasured_commits
from lab.bench.drift import changed, collateral, snapshot
from lab.bench.errors import ScenarioRunError
from lab.bench.facts import OracleSample, RunFacts, healthy_at
from lab.bench.noise import NoiseStep, apply_noise
from lab.bench.records import ALL_STATES, RunRecords, injection_facts
from lab.bench.scenario import FaultStep
from lab.bench.session import BenchConfig, Session
from lab.bench.suite import LoadedScenario
from lab.faults import FaultError, Injection, MitigationOracle, fault
from lab.faults.base import baseline

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Measured:
    """The bench's own μ at a transaction boundary the engine did not measure."""

    mu: float
    at: datetime


@dataclass(slots=True)
class _Settling:
    ended_at: datetime
    workloads: frozenset[str]
    settled_at: datetime | None = None


@dataclass(slots=True)
class _State:
    injections: list[tuple[Injection, float]] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    samples: list[OracleSample] = field(default_factory=list)
    zeroed_by_fault: set[str] = field(default_factory=set)
    boundary: dict[str, _Measured] = field(default_factory=dict)
    #: The same μ for every agent after each boundary (the counterfactual's comparison).
    checks: dict[str, _Measured] = field(default_factory=dict)
    settling: dict[str, _Settling] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    pending_events: int = 0
    timers: list[tuple[float, int, str, Callable[[], None]]] = field(default_factory=list)
    sequence: Iterator[int] = field(default_factory=itertools.count)
    last_sample_s: float = -1e9
    incident_after_fault: bool = False
    #: (kind, name, field path) → the value a fault or noise step set (collateral drift).
    faulted: dict[tuple[str, str, str], object] = field(default_factory=dict)


class Runner:
    def __init__(self, session: Session, loaded: LoadedScenario, config: BenchConfig) -> None:
        self.session = session
        self.loaded = loaded
        self.scenario = loaded.scenario
        self.config = config
        self.world = session.world
        self.clock = session.world.clock
        self.t0 = self.clock.now()
        self.baseline = baseline(self.world.api, session.namespace, self.t0)
        self.before = snapshot(self.world.api, session.namespace)
        self.state = _State()

    # ------------------------------------------------------------------------ timing

    def elapsed(self, at: datetime | None = None) -> float:
        return ((at or self.clock.now()) - self.t0).total_seconds()

    def _schedule(self, at_s: float, callback: Callable[[], None], name: str) -> None:
        """A scenario event: the run does not end before every one has happened."""
        self.state.pending_events += 1

        def fire() -> None:
            self.state.pending_events -= 1
            callback()

        if at_s <= 0:
            fire()
        else:
            self._call_at(at_s, fire, name)

    def _call_at(self, at_s: float, callback: Callable[[], None], name: str) -> None:
        # The run's own timers, fired from its clock tick: nothing outlives the run (the lab's
        # shared timer registry would keep this runner, and its world, alive).
        heapq.heappush(self.state.timers, (at_s, next(self.state.sequence), name, callback))

    def _later(self, delay_s: float, callback: Callable[[], None], name: str) -> None:
        self._call_at(self.elapsed() + delay_s, callback, name)

    def _fire_due(self, at_s: float) -> None:
        timers = self.state.timers
        while timers and timers[0][0] <= at_s + 1e-9:
            _, _, name, callback = heapq.heappop(timers)
            logger.debug("bench timer %s at %.0fs", name, at_s)
            callback()

    # ------------------------------------------------------------------------ events

    def _inject(self, step: FaultStep) -> None:
        before = snapshot(self.world.api, self.session.namespace)
        try:
            injection = fault(step.fault).inject(
                self.world,
                app=self.scenario.app,
                target=step.target,
                params=dict(step.params),
            )
        except FaultError as e:
            self.state.errors.append(f"fault {step.fault} at {step.at:g}s: {e}")
            return
        self.state.injections.append((injection, self.elapsed()))
        self._faulted(before)
        for key in self._zeroed():
            self.state.zeroed_by_fault.add(key)

    def _noise(self, step: NoiseStep) -> None:
        before = snapshot(self.world.api, self.session.namespace)
        try:
            self.state.noise.append(
                f"{self.elapsed():.0f}s: "
                + apply_noise(self.world, self.scenario.app, step, self._later)
            )
        except ScenarioRunError as e:
            self.state.errors.append(str(e))
        self._faulted(before)

    def _faulted(self, before: dict[tuple[str, str], dict[str, object]]) -> None:
        """Record what a fault or noise step just changed (nothing else writes meanwhile)."""
        after = snapshot(self.world.api, self.session.namespace)
        self.state.faulted.update(changed(before, after))

    def _zeroed(self) -> list[str]:
        """Baseline workloads now deleted or at zero replicas."""
        out = []
        for key, replicas in sorted(self.baseline.workloads.items()):
            kind, _, name = key.partition("/")
            obj = self.world.api.get(kind, self.session.namespace, name)
            if replicas > 0 and (
                obj is None or int((obj.get("spec") or {}).get("replicas", 1)) == 0
            ):
                out.append(key)
        return out

    # ------------------------------------------------------------------------ oracle

    def _check(self) -> tuple[str, ...]:
        problems: list[str] = []
        for injection, _ in self.state.injections:
            verdict = MitigationOracle(injection, window_s=self.config.oracle_window_s).check(
                self.world
            )
            problems.extend(p for p in verdict.problems if p not in problems)
        return tuple(problems)

    def _on_tick(self, now: datetime) -> None:
        at = self.elapsed(now)
        self._fire_due(at)
        if not self.state.injections or at - self.state.last_sample_s < self.config.oracle_every_s:
            return
        self.state.last_sample_s = at
        self.state.samples.append(OracleSample(at_s=at, mitigated=not self._check()))

    def _first_fault_s(self) -> float | None:
        real = [at for i, at in self.state.injections if i.fault_id != "no-fault"]
        return min(real) if real else None

    def _healthy_at(self, at_s: float) -> bool:
        return healthy_at(self.state.samples, self._first_fault_s(), at_s)

    # -------------------------------------------------------------------------- run

    def run(self) -> RunFacts:
        limits = self.scenario.time_limits
        for step in self.scenario.faults:
            self._schedule(step.at, partial(self._inject, step), f"fault {step.fault}")
        for noise in self.scenario.noise:
            self._schedule(noise.at, partial(self._noise, noise), f"noise {noise.kind}")
        self._plan_chaos()
        self.clock.on_tick(self._on_tick)
        self.session.notifier.listeners.append(self._on_event)
        control = self.loaded.expect.value == "no-incident"
        quiet_since: float | None = None
        end_reason = f"time limit ({limits.total:g}s)"
        loop = self.session.loop
        while True:
            loop.step()
            self._after_step()
            if self.state.errors:
                raise ScenarioRunError("; ".join(self.state.errors))
            now = self.elapsed()
            if now >= limits.total:
                break
            if not control and self.state.pending_events == 0 and self.state.incident_after_fault:
                # An escalated incident is a person's now: it stays open while its alerts
                # fire (an unfixable fault keeps firing), but the agent is done with it.
                busy = [
                    row
                    for row in self.session.store.incidents.list_open()
                    if row.state != IncidentState.ESCALATED.value
                ]
                if busy:
                    quiet_since = None
                elif quiet_since is None:
                    quiet_since = now
                elif now - quiet_since >= self.config.observe_s:
                    end_reason = f"incidents ended; observed {self.config.observe_s:g}s more"
                    break
            self.clock.sleep(min(self.config.step_s, max(limits.total - now, 1.0)))
        if self.session.chaos is not None:
            self.session.chaos.off(self.clock.now())
        self._measure_boundaries(final=True)
        return self._facts(end_reason)

    def _plan_chaos(self) -> None:
        """`--chaos`: the run's outages, from the first fault's time (the start of a control)."""
        chaos = self.session.chaos
        if chaos is None:
            return
        real = [step.at for step in self.scenario.faults if step.fault != "no-fault"]
        for outage in plan_outages(self.config.seed, self.scenario.id, min(real, default=0.0)):
            self._call_at(
                outage.at_s,
                partial(lambda kind: chaos.on(kind, self.clock.now()), outage.kind),
                f"chaos {outage.kind.value} on",
            )
            self._call_at(
                outage.end_s, lambda: chaos.off(self.clock.now()), f"chaos {outage.kind.value} off"
            )

    def _after_step(self) -> None:
        store = self.session.store
        first = self._first_fault_s()
        for row in store.incidents.list_by_state(*ALL_STATES):
            if row.id in self.state.seen:
                continue
            self.state.seen.add(row.id)
            timeline = store.incidents.timeline(row.id)
            opened = self.elapsed(timeline[0].at if timeline else row.opened_at)
            if first is not None and opened >= first:
                self.state.incident_after_fault = True
        self._measure_boundaries(final=False)

    def _measure_boundaries(self, *, final: bool) -> None:
        """μ at the boundary of a transaction the engine did not validate (the naive agent),
        measured as validation would have: once the workloads it wrote have settled (or the
        settle timeout passed), SLOs over one sustain window and only alerts that started in
        it. At the end of the run, whatever is still pending is measured over what there is."""
        limits = self.config.limits
        now = self.clock.now()
        machine = self.session.brain.machine
        for incident in self.session.store.incidents.list_by_state(*ALL_STATES):
            for tx in machine.transactions(incident.id):
                if tx.mu_after is not None or tx.ended_at is None or tx.id in self.state.boundary:
                    continue
                pending = self.state.settling.get(tx.id)
                if pending is None:
                    pending = self.state.settling[tx.id] = _Settling(
                        ended_at=tx.ended_at, workloads=self._written_workloads(tx.id)
                    )
                waited = (now - pending.ended_at).total_seconds()
                if (
                    pending.settled_at is None
                    and waited >= limits.settle_min_s
                    and (waited >= limits.settle_timeout_s or self._converged(pending.workloads))
                ):
                    pending.settled_at = now
                since = pending.settled_at or pending.ended_at
                window = (now - since).total_seconds()
                waiting = pending.settled_at is None or window < limits.sustain_s
                if waiting and not final:
                    continue
                try:
                    severity = self.session.brain.meter.measure(
                        tx.scope,
                        window_s=int(max(limits.poll_s, min(window, limits.sustain_s))),
                        alerts_since=since,
                    )
                except StratusError:  # an outage (--chaos): measured when it is over
                    continue
                self.state.boundary[tx.id] = _Measured(mu=severity.mu, at=now)
        self._check_boundaries()

    def _check_boundaries(self) -> None:
        """`check_mu` where the bench measured a boundary itself (the naive agent's)."""
        for tx_id in self.state.boundary.keys() - self.state.checks.keys():
            self._record_check(tx_id)

    def _on_event(self, event: IncidentEvent) -> None:
        """`check_mu` the moment a validated transaction ends. One loop step can run a
        transaction, its rollback and the next attempt (validation moves the clock), so
        measuring at the step's end would measure the next attempt's work."""
        if not isinstance(event, TransactionFinished) or not event.outcome.transaction_id:
            return
        tx_id = event.outcome.transaction_id
        txs = self.session.brain.machine.transactions(event.incident.id)
        tx = next((t for t in txs if t.id == tx_id), None)
        if tx is not None and tx.mu_after is not None and tx_id not in self.state.checks:
            self._record_check(tx_id)

    def _record_check(self, tx_id: str) -> None:
        mu = self.check_mu()
        if mu is not None:
            self.state.checks[tx_id] = _Measured(mu=mu, at=self.clock.now())

    def check_mu(self) -> float | None:
        """μ now over one sustain window, counting the alerts that started in it (None when a
        source does not answer)."""
        sustain = self.config.limits.sustain_s
        now = self.clock.now()
        try:
            severity = self.session.brain.meter.measure(
                self.session.scope,
                window_s=int(sustain),
                alerts_since=now - timedelta(seconds=sustain),
            )
        except StratusError:
            return None
        return severity.mu if severity.complete else None

    def without_agent(self, times: Sequence[float]) -> dict[float, float]:
        """The counterfactual run: the scenario's faults and noise at the same lab times, the
        loop never stepped (no detection, no plan, no write), and `check_mu` at each of `times`
        (lab s). Same seed, same world: what μ would have been had the agent done nothing."""
        for step in self.scenario.faults:
            self._schedule(step.at, partial(self._inject, step), f"fault {step.fault}")
        for noise in self.scenario.noise:
            self._schedule(noise.at, partial(self._noise, noise), f"noise {noise.kind}")
        self.clock.on_tick(self._on_tick)
        out: dict[float, float] = {}
        for at in sorted(set(times)):
            while self.elapsed() < at - 1e-6:
                self.clock.sleep(min(self.config.step_s, at - self.elapsed()))
            if self.state.errors:
                raise ScenarioRunError("; ".join(self.state.errors))
            mu = self.check_mu()
            if mu is not None:
                out[at] = mu
        return out

    def _written_workloads(self, transaction_id: str) -> frozenset[str]:
        return frozenset(
            e.target_name
            for e in self.session.store.undo.stack(transaction_id)
            if e.target_kind in ("Deployment", "StatefulSet")
        )

    def _converged(self, names: frozenset[str]) -> bool:
        if not names:
            return True
        try:
            states = self.session.cluster.workloads(self.session.namespace)
        except ClusterError:  # an outage (--chaos): not known to have converged
            return False
        return all(w.converged for w in states if w.name in names)

    # ------------------------------------------------------------------------ facts

    def _facts(self, end_reason: str) -> RunFacts:
        reader = RunRecords(self.session, self.elapsed)
        boundary = {tx: m.mu for tx, m in self.state.boundary.items()}
        checks = {tx: (self.elapsed(m.at), m.mu) for tx, m in self.state.checks.items()}
        incidents = reader.incidents(boundary=boundary, healthy_at=self._healthy_at, checks=checks)
        final = self._check() if self.state.injections else ()
        writes = reader.writes()
        written = {_kind_name(w.target) for w in writes if w.target}
        drift = collateral(
            self.before,
            snapshot(self.world.api, self.session.namespace),
            written=written,
            faulted=self.state.faulted,
        )
        fallible = self.session.fallible
        outages, unmeasured = self._chaos_facts()
        harmful = [
            f"{key} is deleted or scaled to zero at the end"
            for key in self._zeroed()
            if key not in self.state.zeroed_by_fault
        ]
        return RunFacts(
            injections=tuple(
                injection_facts(i, at, self.elapsed) for i, at in self.state.injections
            ),
            noise=tuple(self.state.noise),
            incidents=tuple(incidents),
            writes=tuple(writes),
            samples=tuple(self.state.samples),
            final_problems=final,
            harmful=tuple(harmful),
            lab_s=self.elapsed(),
            end_reason=end_reason,
            drift=tuple(drift),
            faulted=tuple(sorted({f"{kind}/{name}" for kind, name, _ in self.state.faulted})),
            plan_noise=tuple(fallible.log) if fallible is not None else (),
            outages=outages,
            unmeasured_commits=unmeasured,
        )

    def _chaos_facts(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """`--chaos`: the outages, and the commits one of them left unmeasured."""
        chaos = self.session.chaos
        if chaos is None:
            return (), ()
        machine = self.session.brain.machine
        transactions = sorted(
            (
                tx
                for row in self.session.store.incidents.list_by_state(*ALL_STATES)
                for tx in machine.transactions(row.id)
            ),
            key=lambda tx: tx.started_at,  # lab time: the same order for the same seed
        )
        found = unmeasured_commits(transactions, chaos.log, sustain_s=self.config.limits.sustain_s)
        return chaos.describe(self.elapsed), tuple(found)


def _kind_name(target: str) -> tuple[str, str]:
    """`Deployment/ns/name` or `Node/name` → (kind, name)."""
    parts = target.split("/")
    return parts[0], parts[-1]
