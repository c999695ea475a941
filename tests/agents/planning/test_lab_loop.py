"""The planner inside the whole STRATUS loop on the lab.

A fault from the lab's library breaks a running app; the periodic scan raises the alerts; the
real diagnoser reads the served API through the official client (`KubernetesCluster`) and the
change journal (SQLite) that watched the namespace; the planner proposes; the transaction
engine previews the candidates in order and runs the first admissible one, as the state
machine does; after an abort or an unhealthy commit the loop diagnoses again and the planner
reflects. The lab's mitigation oracle — not the planner's own opinion — says whether the app
is healed. Faults no undoable action can fix must end in an escalation with nothing written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.detection.scan import Scanner
from agents.diagnosis import Diagnoser
from agents.journal import ChangeJournal
from agents.model import (
    Alert,
    AlertStatus,
    Incident,
    IncidentId,
    IncidentState,
    OutcomeKind,
    Scope,
)
from agents.planning import Attempt, CandidatePlan, Escalation, RulePlanner
from agents.severity import SeverityMeter
from agents.tnr import TnrLimits, TransactionEngine, TransactionRequest
from agents.tnr.ledger import StorageLedger
from lab.faults import OracleVerdict, check_mitigation, fault
from lab.sim.world import LabWorld, WorldConfig
from storage import Store
from storage.migrations import upgrade
from tests.agents.planning.scene import attempt

pytestmark = pytest.mark.slow

FAST = TnrLimits(
    sustain_s=30, poll_s=5, settle_min_s=5, settle_timeout_s=120, lock_ttl_s=30, deadline_s=600
)
MAX_ATTEMPTS = 3


@dataclass
class Run:
    attempts: list[Attempt] = field(default_factory=list)
    escalation: Escalation | None = None
    previewed: list[CandidatePlan] = field(default_factory=list)
    verdict: OracleVerdict | None = None
    alerts: list[Alert] = field(default_factory=list)  # what the scan raised


@dataclass
class Loop:
    world: LabWorld
    cluster: KubernetesCluster
    store: Store
    namespace: str

    def run(self, fault_id: str) -> Run:
        world, cluster, ns = self.world, self.cluster, self.namespace
        scope = Scope(cluster="lab", namespace=ns)
        journal = ChangeJournal(store=self.store, clock=world.clock, cluster="lab", namespaces=[ns])
        journal.sync(cluster)  # the baseline, before anything breaks
        world.advance(30)
        injection = fault(fault_id).inject(world, app=ns)
        scanner = Scanner(reader=cluster, metrics=world.metrics, clock=world.clock, namespaces=[ns])
        alerts: list[Alert] = []
        for _ in range(24):  # up to two lab minutes for the scan's for-durations
            world.advance(5)
            journal.sync(cluster)
            alerts = [a for a in scanner.scan() if a.status is AlertStatus.FIRING]
            if alerts:
                break
        meter = SeverityMeter(reader=cluster, metrics=world.metrics)
        now = world.clock.now()
        incident = Incident(
            id=IncidentId("inc-lab"),
            title=fault_id,
            scope=scope,
            state=IncidentState.PLANNING,
            mu0=meter.measure(scope, window_s=60).mu,
            opened_at=min((a.starts_at for a in alerts), default=now),
            updated_at=now,
            service=alerts[0].service if alerts else None,
        )
        diagnoser = Diagnoser(
            cluster=cluster, clock=world.clock, metrics=world.metrics, journal=journal
        )
        ledger = StorageLedger(self.store)
        engine = TransactionEngine(
            reader=cluster,
            writer=cluster,
            meter=meter,
            ledger=ledger,
            clock=world.clock,
            holder="test-loop",
            limits=FAST,
        )
        planner = RulePlanner(cluster, journal)
        run = Run(alerts=alerts)
        for number in range(1, MAX_ATTEMPTS + 1):
            diagnosis = diagnoser.diagnose(incident, alerts)
            proposal = planner.plan(incident, diagnosis, run.attempts, now=world.clock.now())
            if proposal.escalation is not None:
                run.escalation = proposal.escalation
                break
            chosen = None
            for candidate in proposal.candidates:  # as IncidentMachine._first_admissible
                run.previewed.append(candidate)
                if all(p.admitted for p in engine.preview(scope, candidate.actions)):
                    chosen = candidate
                    break
            assert chosen is not None, "no admissible candidate"
            outcome = engine.run(
                TransactionRequest(scope=scope, actions=chosen.actions, mu0=incident.mu0, actor="t")
            )
            figures = ledger.transaction(outcome.transaction_id).validation or {}
            severity = figures.get("severity") or {}
            run.attempts.append(
                attempt(
                    chosen,
                    outcome.kind,
                    mu_before=outcome.mu_before,
                    mu_after=outcome.mu_after,
                    reason=outcome.reason,
                    findings=severity.get("findings") or (),
                    number=number,
                )
            )
            journal.sync(cluster)
            if outcome.kind is OutcomeKind.COMMITTED and outcome.healthy:
                break
            world.advance(10)
            journal.sync(cluster)
            incident = replace(incident, attempt=number)
        verdict = check_mitigation(world, injection)
        for _ in range(20):
            if verdict.mitigated:
                break
            world.advance(5)
            verdict = check_mitigation(world, injection)
        run.verdict = verdict
        return run


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'stratus.db'}"
    upgrade(url)
    store = Store.connect(url)
    yield store
    store.close()


def _loop(app: str, tmp_path: Path, store: Store) -> Iterator[Loop]:
    config = WorldConfig(apps=(app,), seed=3, serve_api=True, kubeconfig=tmp_path / "kubeconfig")
    with LabWorld(config) as world:
        world.wait_healthy()
        assert config.kubeconfig is not None
        cluster = KubernetesCluster.connect(kubeconfig=config.kubeconfig, cluster_name="lab")
        try:
            yield Loop(world=world, cluster=cluster, store=store, namespace=app)
        finally:
            cluster.close()


@pytest.fixture
def hotel(tmp_path: Path, store: Store) -> Iterator[Loop]:
    yield from _loop("hotel-reservation", tmp_path, store)


@pytest.fixture
def shop(tmp_path: Path, store: Store) -> Iterator[Loop]:
    yield from _loop("online-shop", tmp_path, store)


UNDOABLE = [
    ("hotel", "wrong-target-port", "patch_service"),
    ("shop", "scale-to-zero", "scale"),
    ("shop", "image-not-found", "rollback"),
    ("hotel", "crashing-image", "rollback"),  # the diagnosis ranks a network guess first
    ("shop", "wrong-binary", "rollback"),
    ("hotel", "node-selector-mismatch", "set_scheduling"),
    ("hotel", "memory-limit-too-low", "set_resources"),
    ("shop", "cpu-limit-too-low", "set_resources"),  # below two network guesses
    ("hotel", "wrong-database-host", "set_configmap"),
    ("shop", "feature-flag", "set_configmap"),
]


@pytest.mark.parametrize(("app", "fault_id", "fix"), UNDOABLE)
def test_an_undoable_fault_is_mitigated_by_the_first_plan(
    app: str, fault_id: str, fix: str, request: pytest.FixtureRequest
) -> None:
    loop: Loop = request.getfixturevalue(app)
    run = loop.run(fault_id)
    assert run.escalation is None, run.escalation
    assert run.verdict is not None and run.verdict.mitigated, (
        run.verdict.summary() if run.verdict else ""
    )
    first = run.attempts[0]
    assert first.plan.actions[0].kind == fix, first.plan.describe()
    assert first.outcome.kind is OutcomeKind.COMMITTED and first.outcome.healthy
    assert len(run.attempts) == 1


def test_a_quota_that_refuses_pods_is_detected_and_mitigated(hotel: Loop) -> None:
    run = hotel.run("resource-quota-too-low")
    # The old pod keeps serving; the scan sees the stalled rollout and its refused pods.
    assert [(a.name, a.service) for a in run.alerts] == [("WorkloadFailedCreate", "search")]
    assert "(quota)" in run.alerts[0].annotations["summary"]
    assert run.verdict is not None
    assert run.verdict.mitigated, run.verdict.summary()
    # The quota merge patch is proposed first, admitted, and heals the app by itself.
    first = run.attempts[0]
    (action,) = first.plan.actions
    assert (action.kind, str(action.target)) == (
        "merge_patch",
        "ResourceQuota/hotel-reservation/compute-quota",
    )
    assert first.outcome.kind is OutcomeKind.COMMITTED and first.outcome.healthy


@pytest.mark.parametrize(
    ("app", "fault_id", "words"),
    [
        ("hotel", "revoked-db-credentials", "db.grantRolesToUser"),
        ("shop", "network-delay", "time-bounded"),
        ("hotel", "network-loss", "networkpolicy"),
    ],
)
def test_a_fault_no_undoable_action_fixes_escalates_without_a_write(
    app: str, fault_id: str, words: str, request: pytest.FixtureRequest
) -> None:
    loop: Loop = request.getfixturevalue(app)
    run = loop.run(fault_id)
    assert run.escalation is not None
    assert not run.attempts, "nothing was written"
    assert words in run.escalation.runbook
