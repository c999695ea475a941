"""The incident machine fails closed (DESIGN section 3, rule 8), on the lab with the real loop:
a transaction that cannot measure μ_before waits without spending an attempt; a rollback that
cannot restore holds the incident open and visible until it can; an incident is not closed
while an alert that opened it still fires."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.incident.headless import HeadlessLoop, auto_approve
from agents.model import IncidentState, OutcomeKind, TransactionStatus, UndoState
from agents.planning.plan import Plan
from agents.policy import build_policy
from agents.tnr import TnrLimits
from agents.wiring import build_brain
from lab.alerts import attach_alerts
from lab.faults import check_mitigation, fault
from lab.sim.world import LabWorld, WorldConfig
from storage import Store
from storage.migrations import upgrade
from tests.agents.incident.conftest import HOTEL, Loop
from tests.agents.tnr.outage import FlakyCluster, FlakyMetrics, Outage

LIMITS = TnrLimits(
    sustain_s=30, poll_s=5, settle_min_s=5, settle_timeout_s=30, lock_ttl_s=30, deadline_s=90
)


@dataclass
class Blind:
    lab: Loop
    api: Outage
    metrics: Outage
    approvals: int = 0


class OutageOnApproval:
    """Approves like `auto_approve`; on the first approval, starts an API outage `start_in_s`
    later (0: before the transaction measures μ_before; 1: after its writes)."""

    def __init__(self, start_in_s: float) -> None:
        self.start_in_s = start_in_s
        self.blind: Blind | None = None

    def __call__(self, plan: Plan) -> Sequence[object]:
        assert self.blind is not None
        self.blind.approvals += 1
        if self.blind.approvals == 1:
            self.blind.api.down_for(self.start_in_s)
        return auto_approve(plan)


@pytest.fixture
def make_blind(tmp_path: Path) -> Iterator[object]:
    opened: list[tuple[LabWorld, KubernetesCluster, Store]] = []

    def make(approver: OutageOnApproval) -> Blind:
        config = WorldConfig(
            apps=(HOTEL,), seed=5, serve_api=True, kubeconfig=tmp_path / "hotel.kubeconfig"
        )
        world = LabWorld(config).start()
        world.wait_healthy()
        alerts = attach_alerts(world)
        assert config.kubeconfig is not None
        cluster = KubernetesCluster.connect(kubeconfig=config.kubeconfig, cluster_name="lab")
        url = f"sqlite:///{tmp_path / 'hotel.db'}"
        upgrade(url)
        store = Store.connect(url)
        opened.append((world, cluster, store))
        api, metrics = Outage(world.clock), Outage(world.clock)
        flaky = FlakyCluster(cluster, api)
        brain = build_brain(
            store=store,
            reader=flaky,  # type: ignore[arg-type]
            writer=flaky,  # type: ignore[arg-type]
            metrics=FlakyMetrics(alerts.metrics, metrics),  # type: ignore[arg-type]
            clock=world.clock,
            namespaces=[HOTEL],
            policy=build_policy({"defaults": {"autonomy": "propose", "attempts": 4}}),
            limits=LIMITS,
        )
        loop = HeadlessLoop(
            machine=brain.machine,
            detector=brain.detector,
            clock=world.clock,
            reader=cluster,
            metrics=alerts.metrics,
            scanner=brain.scanner,
            journal=brain.journal,
            approver=approver,  # type: ignore[arg-type]
            namespaces=[HOTEL],
        )
        loop.step()
        blind = Blind(
            lab=Loop(world=world, brain=brain, loop=loop, store=store), api=api, metrics=metrics
        )
        approver.blind = blind
        return blind

    yield make
    for world, cluster, store in opened:
        cluster.close()
        store.close()
        world.stop()


def step_until(blind: Blind, state: IncidentState, *, timeout_s: float = 600.0) -> str:
    lab = blind.lab

    def reached() -> bool:
        found = lab.incidents()
        return bool(found) and found[0].state is state

    assert lab.loop.run(until=reached, timeout_s=timeout_s, step_s=5.0), [
        (i.id, i.state, lab.timeline(i.id)[-3:]) for i in lab.incidents()
    ]
    return lab.incidents()[0].id


def test_a_transaction_that_cannot_measure_waits_without_spending_an_attempt(
    make_blind: object,
) -> None:
    approver = OutageOnApproval(start_in_s=0)
    blind = make_blind(approver)  # type: ignore[operator]
    injection = fault("wrong-target-port").inject(blind.lab.world, app=HOTEL)
    incident_id = step_until(blind, IncidentState.EXECUTING)
    machine = blind.lab.brain.machine
    assert blind.api.active
    attempt = machine.incident(incident_id).attempt
    for _ in range(3):  # every pass tries again; none spends an attempt or writes
        assert machine.drive(incident_id) is IncidentState.EXECUTING
    assert machine.incident(incident_id).attempt == attempt
    assert machine.transactions(incident_id) == []
    waiting = [m for _, m in blind.lab.timeline(incident_id) if m.startswith("Waiting:")]
    assert waiting == [
        "Waiting: not started: cannot measure cluster: workloads; nothing was written, "
        "trying again later"
    ]
    blind.api.end()
    ended = blind.lab.run_until_ended()
    assert ended.id == incident_id
    states = [s for s, _ in blind.lab.timeline(incident_id)]
    assert "resolved" in states and states[-1] == "closed"
    assert check_mitigation(blind.lab.world, injection).mitigated
    [tx] = machine.transactions(incident_id)
    assert tx.status is TransactionStatus.COMMITTED and tx.validation["complete"] is True


def test_a_rollback_that_cannot_restore_holds_the_incident_open_until_it_can(
    make_blind: object,
) -> None:
    approver = OutageOnApproval(start_in_s=1)  # after the writes: blind while validating
    blind = make_blind(approver)  # type: ignore[operator]
    fault("wrong-target-port").inject(blind.lab.world, app=HOTEL)
    incident_id = step_until(blind, IncidentState.HELD)
    machine = blind.lab.brain.machine
    [tx] = machine.transactions(incident_id)
    assert tx.status is TransactionStatus.HELD and tx.mu_after is None
    assert all(e.state is UndoState.APPLIED for e in machine.engine.ledger.stack(tx.id))
    held = [m for s, m in blind.lab.timeline(incident_id) if s == "held"]
    assert len(held) == 1 and "not restored" in held[0], held
    assert machine.attempts(incident_id)[0].outcome.kind is OutcomeKind.HELD
    # Still blind: each advance tries to finish the restore and stays held, open.
    assert machine.drive(incident_id) is IncidentState.HELD
    assert machine.incident(incident_id).state.is_open
    assert machine.engine.ledger.transaction(tx.id).status is TransactionStatus.HELD

    blind.api.end()
    assert machine.advance(incident_id).after is IncidentState.PLANNING
    finished = machine.engine.ledger.transaction(tx.id)
    assert finished.status is TransactionStatus.ABORTED
    assert all(
        e.state in (UndoState.RESTORED, UndoState.SKIPPED)
        for e in machine.engine.ledger.stack(tx.id)
    )
    ended = blind.lab.run_until_ended()
    assert ended.id == incident_id


class NeverApprove(OutageOnApproval):
    def __init__(self) -> None:
        super().__init__(start_in_s=0)

    def __call__(self, plan: Plan) -> Sequence[object]:
        return ()


def test_an_incident_is_not_closed_while_an_alert_that_opened_it_fires_or_is_unknown(
    make_blind: object,
) -> None:
    blind = make_blind(NeverApprove())  # type: ignore[operator]
    fault("wrong-target-port").inject(blind.lab.world, app=HOTEL)
    incident_id = step_until(blind, IncidentState.AWAITING_APPROVAL)
    machine = blind.lab.brain.machine
    opened = {r.alertname for r in blind.lab.store.incidents.alerts(incident_id)}
    # Whatever path led here, RESOLVED is not CLOSED while the evidence says otherwise.
    incident = machine.incident(incident_id)
    resolved = machine.move(incident, IncidentState.RESOLVED, "resolved (test)")
    assert resolved is not None

    blind.metrics.down_for(0)
    step = machine.advance(incident_id)
    assert step.after is IncidentState.RESOLVED and step.waiting
    assert blind.lab.timeline(incident_id)[-1][1] == (
        "Not closing yet: the alerts that opened it cannot be read"
    )

    blind.metrics.end()
    firing = machine.opening_alerts_firing(machine.incident(incident_id))
    assert firing and set(firing) <= opened
    assert machine.drive(incident_id) is IncidentState.RESOLVED
    assert blind.lab.timeline(incident_id)[-1][1].endswith("still firing")
    assert machine.incident(incident_id).state.is_open


def _waiting_notes(blind: Blind, incident_id: str) -> list[str]:
    return [m for _, m in blind.lab.timeline(incident_id) if m.startswith("Waiting: cannot see")]


def test_a_diagnosis_that_cannot_see_the_cluster_waits_and_diagnoses_when_it_answers(
    make_blind: object,
) -> None:
    blind = make_blind(NeverApprove())  # type: ignore[operator]
    blind.api.down_for(0)
    fault("wrong-target-port").inject(blind.lab.world, app=HOTEL)
    incident_id = step_until(blind, IncidentState.DIAGNOSING)
    machine = blind.lab.brain.machine
    for _ in range(3):  # every pass looks again; none concludes anything from the outage
        assert machine.drive(incident_id) is IncidentState.DIAGNOSING
    assert machine.diagnosis(incident_id) is None
    [note] = _waiting_notes(blind, incident_id)
    assert "connection refused" in note and "diagnosing again when it answers" in note

    blind.api.end()
    step_until(blind, IncidentState.AWAITING_APPROVAL)
    diagnosis = machine.diagnosis(incident_id)
    assert diagnosis is not None and diagnosis.top.service == "geo"
    assert len(_waiting_notes(blind, incident_id)) == 1


def test_a_diagnosis_blind_for_too_long_goes_to_a_person(make_blind: object) -> None:
    from agents.incident.machine import BLIND_LIMIT

    blind = make_blind(NeverApprove())  # type: ignore[operator]
    blind.api.down_for(0)
    fault("wrong-target-port").inject(blind.lab.world, app=HOTEL)
    incident_id = step_until(blind, IncidentState.DIAGNOSING)
    started = blind.lab.world.clock.now()
    incident_id = step_until(
        blind, IncidentState.ESCALATED, timeout_s=BLIND_LIMIT.total_seconds() + 120
    )
    assert blind.lab.world.clock.now() - started >= BLIND_LIMIT
    assert blind.lab.brain.machine.diagnosis(incident_id) is None
    assert blind.lab.brain.machine.transactions(incident_id) == []
    escalated = [m for s, m in blind.lab.timeline(incident_id) if s == "escalated"]
    assert escalated and "did not answer for 10 min" in escalated[0], escalated
    assert len(_waiting_notes(blind, incident_id)) == 1
