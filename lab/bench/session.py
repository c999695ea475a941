"""One (scenario, agent) run's world: a fresh stepped lab, its alerts, the official Kubernetes
client over the served API, a fresh SQLite store, and the brain built by `build_brain` — the
production wiring — with the agent's engine options and attempts.

The lab warms up before the brain sees it: the apps' start-up (pods not yet Ready, callers'
first errors) sits in the alert rules' one-minute windows and the scan's five-minute SLO window
for a while, and a real cluster in steady state shows none of it. The alerts are attached and
the loop's first step (the change journal's baseline) taken only after the warm-up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import urlparse

import yaml

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.deadlines import CallDeadline
from agents.diagnosis import LanguageModel
from agents.incident.events import IncidentEvent, RecordingNotifier
from agents.incident.headless import HeadlessLoop, auto_approve
from agents.model import Scope
from agents.planning.plan import Planner
from agents.policy import build_policy
from agents.ports import MetricsSource
from agents.tnr import TnrLimits
from agents.wiring import Brain, build_brain
from lab.alerts import LabAlerts, attach_alerts
from lab.bench.agents import AgentSpec
from lab.bench.chaos import Chaos
from lab.bench.fallible import FalliblePlanner, PlanNoise
from lab.outages import FaultProxy, SwitchableMetrics
from lab.sim.world import LabWorld, WorldConfig
from storage import Store
from storage.migrations import upgrade

logger = logging.getLogger(__name__)

#: Short validation windows, as the reference lab tests use: sustain 60 lab s, poll every 5 s.
BENCH_LIMITS = TnrLimits(
    sustain_s=60, poll_s=5, settle_min_s=5, settle_timeout_s=180, lock_ttl_s=30
)
CLUSTER_NAME = "lab"


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """How every run of a bench is driven. Picklable (it goes to worker processes)."""

    seed: int = 7
    step_s: float = 5.0  # the headless loop's period: alerts, detection and driving
    #: The periodic scan's spacing, the bot's default (`STRATUS_SCAN_INTERVAL_S`): a bench
    #: that scanned at every step would detect sooner than a deployment does.
    scan_interval_s: float = 30.0
    warmup_s: float = 330.0  # past the scan's 5-minute SLO window after the apps start
    #: The warm-up's clock step. Nothing is wrong yet and nobody watches, so it moves in
    #: steps of a scrape (5 s) instead of 1 s: a third of a run's time went to ticking a
    #: healthy cluster. The run itself ticks every second.
    warmup_tick_s: float = 5.0
    observe_s: float = 120.0  # after the incidents end: does the fix hold, do others open
    oracle_every_s: float = 5.0
    oracle_window_s: float = 30.0
    limits: TnrLimits = field(default_factory=lambda: BENCH_LIMITS)
    evidence_token_budget: int = 24_000
    #: The metric convention the lab's telemetry is read in, and the built-in signal profile
    #: Stratus reads it with (`lab.sim.conventions.CONVENTIONS`); the alert rules stay in the
    #: lab's names.
    signals: str = "lab"
    #: The probability that the planner's proposal is replaced by a plausible wrong one, per
    #: plan asked for (`lab.bench.fallible`); 0: the planner as it is.
    plan_noise: float = 0.0
    #: Outages at seeded moments of every run (`lab.bench.chaos`).
    chaos: bool = False


#: With `--chaos` the client gets one try of 2 s: a stalled API costs wall time per call.
CHAOS_DEADLINE = CallDeadline(timeout_s=2.0, attempts=1)


def _chaos(world: LabWorld, alerts: LabAlerts, kubeconfig: Path) -> Chaos:
    """Put a fault proxy between the session's client and the lab's API (the kubeconfig is
    rewritten to name it) and a switchable source in front of the metrics."""
    upstream = urlparse(world.cluster.url)
    proxy = FaultProxy((upstream.hostname or "127.0.0.1", upstream.port or 80)).start()
    config = yaml.safe_load(kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = proxy.url
    kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
    return Chaos(proxy, SwitchableMetrics(alerts.metrics))


def warmed_world(app: str, config: BenchConfig) -> LabWorld:
    """`app` started on a stepped lab, healthy, and past the warm-up: the same state for
    every run of a bench (it depends on the app, the seed and the signals only). Not served."""
    world = LabWorld(
        WorldConfig(apps=(app,), seed=config.seed, stepped=True, signals=config.signals)
    ).start()
    try:
        world.wait_healthy()
        world.clock.advance(config.warmup_s, tick_s=config.warmup_tick_s)
    except BaseException:
        world.stop()
        raise
    return world


class HookedNotifier(RecordingNotifier):
    """Keeps every event, and hands each to the listeners as it happens: the runner measures
    μ the moment a transaction ends, inside the loop step that ran it."""

    def __init__(self) -> None:
        super().__init__()
        self.listeners: list[Callable[[IncidentEvent], None]] = []

    def notify(self, event: IncidentEvent) -> None:
        super().notify(event)
        for listener in self.listeners:
            listener(event)


class Session:
    def __init__(
        self,
        *,
        world: LabWorld,
        alerts: LabAlerts,
        cluster: KubernetesCluster,
        store: Store,
        brain: Brain,
        loop: HeadlessLoop,
        namespace: str,
        fallible: FalliblePlanner | None = None,
        chaos: Chaos | None = None,
        notifier: HookedNotifier | None = None,
    ) -> None:
        self.notifier = notifier or HookedNotifier()
        self.world = world
        self.alerts = alerts
        self.cluster = cluster
        self.store = store
        self.brain = brain
        self.loop = loop
        self.namespace = namespace
        self.fallible = fallible
        self.chaos = chaos
        self.scope = Scope(cluster=CLUSTER_NAME, namespace=namespace)

    @classmethod
    def open(
        cls,
        *,
        app: str,
        agent: AgentSpec,
        config: BenchConfig,
        workdir: Path,
        model: LanguageModel | None = None,
        scenario: str = "",
        world: LabWorld | None = None,
    ) -> Session:
        """A session on `world` (from `warmed_world`, unserved, used by this session only),
        else on a world warmed up here."""
        workdir.mkdir(parents=True, exist_ok=True)
        kubeconfig = workdir / "kubeconfig"
        world = world or warmed_world(app, config)
        cluster: KubernetesCluster | None = None
        store: Store | None = None
        fallible: FalliblePlanner | None = None
        chaos: Chaos | None = None
        try:
            world.serve(kubeconfig)
            alerts = attach_alerts(world)
            metrics: MetricsSource = alerts.metrics
            deadline = None
            if config.chaos:
                chaos = _chaos(world, alerts, kubeconfig)
                metrics, deadline = chaos.metrics, CHAOS_DEADLINE
            cluster = KubernetesCluster.connect(
                kubeconfig=kubeconfig, cluster_name=CLUSTER_NAME, deadline=deadline
            )
            url = f"sqlite:///{workdir / 'stratus.db'}"
            upgrade(url)
            store = Store.connect(url)
            policy = build_policy(
                {"defaults": {"autonomy": "autonomous", "attempts": agent.attempts}}
            )
            noise = PlanNoise(p=config.plan_noise, seed=config.seed, scenario=scenario)

            def through(planner: Planner) -> Planner:
                # The journal is built with the brain: it is handed over just below.
                nonlocal fallible
                fallible = FalliblePlanner(planner, noise, reader=cluster, journal=None)
                return fallible

            notifier = HookedNotifier()
            brain = build_brain(
                store=store,
                reader=cluster,
                writer=cluster,
                metrics=metrics,
                clock=world.clock,
                namespaces=[app],
                policy=policy,
                holder=f"bench-{agent.name}",
                model=model,
                evidence_token_budget=config.evidence_token_budget,
                limits=config.limits,
                options=agent.options,
                plan_through=through if config.plan_noise > 0 else None,
                notifier=notifier,
            )
            if fallible is not None:
                fallible.journal = brain.journal
            loop = HeadlessLoop(
                machine=brain.machine,
                detector=brain.detector,
                clock=world.clock,
                reader=cluster,
                metrics=metrics,
                scanner=brain.scanner,
                journal=brain.journal,
                approver=auto_approve,
                namespaces=[app],
                scan_every_s=config.scan_interval_s,
            )
            loop.step()  # the change journal's baseline, before anything happens
        except BaseException:
            if cluster is not None:
                cluster.close()
            if store is not None:
                store.close()
            if chaos is not None:
                chaos.proxy.stop()
            world.stop()
            raise
        return cls(
            world=world,
            alerts=alerts,
            cluster=cluster,
            store=store,
            brain=brain,
            loop=loop,
            namespace=app,
            fallible=fallible,
            chaos=chaos,
            notifier=notifier,
        )

    def close(self) -> None:
        if self.chaos is not None:
            self.chaos.proxy.stop()
        self.cluster.close()
        self.store.close()
        self.world.stop()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
