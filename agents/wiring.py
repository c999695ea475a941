"""Assemble the incident brain from its ports.

The bot's `build_services(settings)` turns settings into adapters (Kubernetes, Prometheus,
Anthropic, the database) and calls `build_brain`; the lab's benchmark and demo call it with the
lab's stand-ins. Both get the same wiring, which is what the tests exercise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.detection.detector import Detector, DetectorConfig
from agents.detection.scan import Scanner
from agents.detection.scan_rules import ScanConfig
from agents.detection.settling import Settling
from agents.diagnosis import ClaudeSettings, Diagnoser, LanguageModel
from agents.incident.approvals import Approvals
from agents.incident.events import Notifier, RecordingNotifier
from agents.incident.machine import IncidentMachine
from agents.journal import ChangeJournal
from agents.planning import RulePlanner
from agents.planning.plan import Planner
from agents.policy import Policy, default_policy
from agents.ports import Clock, ClusterReader, ClusterWriter, MetricsSource
from agents.redact import redact_text
from agents.severity import SeverityMeter
from agents.similar import SimilarIncidents
from agents.tnr import EngineOptions, TnrLimits, TransactionEngine, Undoer
from agents.tnr.ledger import StorageLedger
from storage import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class Brain:
    store: Store
    policy: Policy
    meter: SeverityMeter
    detector: Detector
    scanner: Scanner
    journal: ChangeJournal
    similar: SimilarIncidents
    diagnoser: Diagnoser
    planner: RulePlanner
    engine: TransactionEngine
    undoer: Undoer
    machine: IncidentMachine
    approvals: Approvals
    namespaces: tuple[str, ...]
    clock: Clock
    metrics: MetricsSource | None  # what the diagnosis and the scan read (None: no Prometheus)
    cluster: str = ""  # the cluster's name: incidents of other clusters share the store


def build_brain(
    *,
    store: Store,
    reader: ClusterReader,
    writer: ClusterWriter,
    metrics: MetricsSource | None,
    clock: Clock,
    namespaces: Sequence[str],
    policy: Policy | None = None,
    notifier: Notifier | None = None,
    holder: str = "stratus",
    model: LanguageModel | None = None,
    claude: ClaudeSettings | None = None,
    evidence_token_budget: int = 24_000,
    limits: TnrLimits | None = None,
    options: EngineOptions | None = None,
    detector_config: DetectorConfig | None = None,
    scan_config: ScanConfig | None = None,
    cached: ClusterReader | None = None,
    plan_through: Callable[[Planner], Planner] | None = None,
) -> Brain:
    """`limits` overrides the policy's transaction limits (the bench runs shorter windows).

    `cached` (the bot's `ClusterCache`) serves the reads that may lag the server by a watch's
    delivery: the scan, detection's μ0, diagnosis and planning. The transaction engine (its
    previews, writes, validation and undo) always reads `reader`: validation measures the
    effect of our own write and must never see the state from before it.

    `plan_through` wraps the planner the incident machine calls: the bench's seam for a
    planner that is sometimes wrong (`lab.bench.fallible`). The bot passes nothing; wrapped
    plans still go through admission, the dry run and the engine like any other."""
    policy = policy or default_policy()
    defaults = policy.defaults
    meter = SeverityMeter(
        reader=reader, metrics=metrics, weights=defaults.weights, slo=defaults.slo
    )
    lagging = cached or reader
    detection_meter = (
        SeverityMeter(reader=lagging, metrics=metrics, weights=defaults.weights, slo=defaults.slo)
        if cached is not None
        else meter
    )
    journal = ChangeJournal(
        store=store, clock=clock, cluster=reader.cluster_name, namespaces=tuple(namespaces)
    )
    similar = SimilarIncidents(store, cluster=reader.cluster_name)
    diagnoser = Diagnoser(
        cluster=lagging,
        clock=clock,
        metrics=metrics,
        journal=journal,
        similar=similar,
        redactor=redact_text,
        evidence_token_budget=evidence_token_budget,
        model=model,
        claude=claude,
    )
    engine = TransactionEngine(
        reader=reader,
        writer=writer,
        meter=meter,
        ledger=StorageLedger(store),
        clock=clock,
        holder=holder,
        limits=limits or defaults.limits,
        options=options,
    )
    undoer = Undoer(engine)
    planner = RulePlanner(lagging, journal, policy=policy)
    machine = IncidentMachine(
        store=store,
        diagnoser=diagnoser,
        planner=plan_through(planner) if plan_through is not None else planner,
        engine=engine,
        undoer=undoer,
        policy=policy,
        clock=clock,
        notifier=notifier or RecordingNotifier(),
    )
    detector_config = detector_config or DetectorConfig(weights=defaults.weights)
    detector = Detector(
        store=store,
        meter=detection_meter,
        clock=clock,
        cluster=reader.cluster_name,
        namespaces=tuple(namespaces),
        config=detector_config,
        settling=(
            Settling(lagging, window_s=detector_config.settle_s)
            if detector_config.settle_s > 0
            else None
        ),
    )
    scanner = Scanner(
        reader=lagging,
        metrics=metrics,
        clock=clock,
        namespaces=tuple(namespaces),
        config=scan_config or ScanConfig(slo=defaults.slo),
    )
    return Brain(
        store=store,
        policy=policy,
        meter=meter,
        detector=detector,
        scanner=scanner,
        journal=journal,
        similar=similar,
        diagnoser=diagnoser,
        planner=planner,
        engine=engine,
        undoer=undoer,
        machine=machine,
        approvals=Approvals(machine),
        namespaces=tuple(namespaces),
        clock=clock,
        metrics=metrics,
        cluster=reader.cluster_name,
    )
