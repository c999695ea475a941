"""Fail closed at planning time, on the lab, through the real state machine.

- A held plan (a value only a reasoner named, a tie, a weak hypothesis, a blind diagnosis)
  is never approved by the policy, at `auto-low-risk` or `autonomous`: it waits in
  AWAITING_APPROVAL and the cluster is untouched.
- An incident whose symptoms cleared before any change, fully measured, gets no plan and
  closes as transient with the figures in its timeline; with a measurement that could not
  read the metrics it does not close as transient.

The loop is wired as `conftest.make_loop` wires it (lab world, the official client, SQLite,
`build_brain`, the headless driver), with two stand-ins in front of the real parts: a
diagnoser that reframes the real diagnosis (the way a reasoner could have framed it) or lets
the blip pass while it diagnoses, and a metrics source that can go down.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.diagnosis.assessment import PREFIX, Assessment
from agents.diagnosis.suspect import Suspect
from agents.errors import MetricsError
from agents.incident.events import RecordingNotifier
from agents.incident.headless import HeadlessLoop, never_approve
from agents.incident.machine import Diagnoses, IncidentMachine
from agents.model import (
    Alert,
    Diagnosis,
    GoldenSignals,
    Incident,
    IncidentState,
    PlanStatus,
    Series,
)
from agents.policy import Policy, build_policy
from agents.ports import MetricsSource
from agents.wiring import build_brain
from lab.alerts import attach_alerts
from lab.faults import Injection, fault
from lab.sim.world import LabWorld, WorldConfig
from storage import Store
from storage.migrations import upgrade
from tests.agents.incident.conftest import HOTEL, LIMITS

Reframe = Callable[[Diagnosis], Diagnosis]
WATCHED = ("Deployment", "Service", "ConfigMap", "HorizontalPodAutoscaler")


def policy(autonomy: str) -> Policy:
    return build_policy({"defaults": {"autonomy": autonomy, "attempts": 4}})


class SwitchableMetrics:
    """The lab's metrics, until `down` is set: then every read fails as an unreachable
    Prometheus does (`MetricsError`)."""

    def __init__(self, inner: MetricsSource) -> None:
        self.inner = inner
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise MetricsError("prometheus: connection refused (stand-in outage)")

    def golden_signals(
        self, namespace: str, services: Sequence[str] | None = None, *, window_s: int = 60
    ) -> Mapping[str, GoldenSignals]:
        self._check()
        return self.inner.golden_signals(namespace, services, window_s=window_s)

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Alert]:
        self._check()
        return self.inner.firing_alerts(namespace)

    def series(
        self, namespace: str, service: str, signal: str, *, start: datetime, end: datetime
    ) -> Sequence[Series]:
        self._check()
        return self.inner.series(namespace, service, signal, start=start, end=end)

    def call_graph(self, namespace: str, *, window_s: int = 300) -> Sequence[tuple[str, str]]:
        self._check()
        return self.inner.call_graph(namespace, window_s=window_s)

    def query(self, promql: str) -> Sequence[Series]:
        self._check()
        return self.inner.query(promql)


class Reframing:
    """The real diagnoser, then `reframe` on what it found; `after` runs once diagnosis is
    done (the blip passes, Prometheus goes down)."""

    def __init__(self, inner: Diagnoses) -> None:
        self.inner = inner
        self.reframe: Reframe = lambda d: d
        self.after: Callable[[], None] = lambda: None

    def diagnose(self, incident: Incident, alerts: Sequence[Alert]) -> Diagnosis:
        found = self.reframe(self.inner.diagnose(incident, alerts))
        self.after()
        return found


@dataclass
class Lab:
    world: LabWorld
    loop: HeadlessLoop
    machine: IncidentMachine
    store: Store
    metrics: SwitchableMetrics
    diagnoser: Reframing
    policy: Policy

    def incidents(self) -> list[Incident]:
        return self.loop.incidents()

    def timeline(self, incident_id: str) -> list[tuple[str, str]]:
        return [(e.state, e.message) for e in self.store.incidents.timeline(incident_id)]

    def specs(self) -> dict[str, Any]:
        """What a write would change: every watched object's spec or data."""
        return {
            f"{kind}/{o['metadata']['name']}": o.get("spec") or o.get("data")
            for kind in WATCHED
            for o in self.world.api.list(kind, HOTEL)
        }

    def transactions(self) -> list[Any]:
        return [t for i in self.incidents() for t in self.machine.transactions(i.id)]

    def run_until(self, done: Callable[[], bool], *, timeout_s: float = 600) -> None:
        assert self.loop.run(until=done, timeout_s=timeout_s, step_s=5), [
            (i.id, i.state, self.timeline(i.id)) for i in self.incidents()
        ]


MakeLab = Callable[[Policy], Lab]


@pytest.fixture
def make_lab(tmp_path: Path) -> Iterator[MakeLab]:
    opened: list[tuple[LabWorld, KubernetesCluster, Store]] = []

    def make(chosen: Policy) -> Lab:
        config = WorldConfig(
            apps=(HOTEL,), seed=5, serve_api=True, kubeconfig=tmp_path / "lab.kubeconfig"
        )
        world = LabWorld(config).start()
        world.wait_healthy()
        alerts = attach_alerts(world)
        assert config.kubeconfig is not None
        cluster = KubernetesCluster.connect(kubeconfig=config.kubeconfig, cluster_name="lab")
        url = f"sqlite:///{tmp_path / 'lab.db'}"
        upgrade(url)
        store = Store.connect(url)
        opened.append((world, cluster, store))
        metrics = SwitchableMetrics(alerts.metrics)
        brain = build_brain(
            store=store,
            reader=cluster,
            writer=cluster,
            metrics=metrics,
            clock=world.clock,
            namespaces=[HOTEL],
            policy=chosen,
            limits=LIMITS,
        )
        diagnoser = Reframing(brain.diagnoser)
        machine = IncidentMachine(
            store=store,
            diagnoser=diagnoser,
            planner=brain.planner,
            engine=brain.engine,
            undoer=brain.undoer,
            policy=chosen,
            clock=world.clock,
            notifier=RecordingNotifier(),
        )
        loop = HeadlessLoop(
            machine=machine,
            detector=brain.detector,
            clock=world.clock,
            reader=cluster,
            metrics=metrics,
            scanner=brain.scanner,
            journal=brain.journal,
            approver=never_approve,
            namespaces=[HOTEL],
        )
        loop.step()  # the change journal's baseline, before anything breaks
        return Lab(
            world=world,
            loop=loop,
            machine=machine,
            store=store,
            metrics=metrics,
            diagnoser=diagnoser,
            policy=chosen,
        )

    yield make
    for world, cluster, store in opened:
        cluster.close()
        store.close()
        world.stop()


# ------------------------------------------------------------------ reframed diagnoses


def _with_assessment(diagnosis: Diagnosis, change: Callable[[Assessment], Assessment]) -> Diagnosis:
    found = Assessment.of(diagnosis)
    assert found is not None, "the real diagnosis carries its assessment"
    evidence = tuple(
        replace(e, source="replaced") if e.source.startswith(PREFIX) else e
        for e in diagnosis.evidence
    )
    return replace(diagnosis, evidence=(*evidence, change(found).to_evidence(HOTEL)))


def tied(diagnosis: Diagnosis) -> Diagnosis:
    other = next(s for s in ("search", "frontend") if s != diagnosis.top.service)
    return _with_assessment(diagnosis, lambda a: replace(a, tied=(diagnosis.top.service, other)))


def blind(diagnosis: Diagnosis) -> Diagnosis:
    return _with_assessment(
        diagnosis, lambda a: replace(a, unread=("pods: connection refused (stand-in)",))
    )


def weak(diagnosis: Diagnosis) -> Diagnosis:
    return replace(
        diagnosis, hypotheses=tuple(replace(h, confidence=0.2) for h in diagnosis.hypotheses)
    )


def suggested(diagnosis: Diagnosis) -> Diagnosis:
    """The top hypothesis rests instead on a replica count only the reasoner names: no
    journal entry, revision or live object ever had 2 replicas of the culprit."""
    top = diagnosis.top
    suspect = Suspect(
        kind="Deployment",
        namespace=HOTEL,
        name=top.service,
        field="spec.replicas",
        current="1",
        last_known_good="2",
        reason="the reasoner says it ran 2",
    )
    evidence = (*diagnosis.evidence, suspect.to_evidence(service=top.service))
    hypothesis = replace(top, confidence=0.9, evidence=(len(evidence) - 1,))
    return replace(diagnosis, hypotheses=(hypothesis,), evidence=evidence)


#: case → (reframe, fault injected, what the hold says). A scaled-to-zero workload's fix
#: (scale back up) is low risk, so `auto-low-risk` would run it but for the hold; the
#: suggestion scales the target port's culprit from 1 to 2 (low risk too).
HELD: dict[str, tuple[Reframe, str, str]] = {
    "suggestion": (suggested, "wrong-target-port", "not seen before in this cluster"),
    "tie": (tied, "scale-to-zero", "tie"),
    "weak": (weak, "scale-to-zero", "weak"),
    "blind": (blind, "scale-to-zero", "could not read all of the cluster"),
}


@pytest.mark.parametrize("autonomy", ["auto-low-risk", "autonomous"])
@pytest.mark.parametrize("case", sorted(HELD))
def test_a_held_plan_waits_for_a_person_at_every_autonomy(
    make_lab: MakeLab, case: str, autonomy: str
) -> None:
    reframe, fault_id, reason = HELD[case]
    lab = make_lab(policy(autonomy))
    lab.diagnoser.reframe = reframe
    fault(fault_id).inject(lab.world, app=HOTEL)
    before = lab.specs()
    lab.run_until(lambda: any(i.state is IncidentState.AWAITING_APPROVAL for i in lab.incidents()))
    lab.world.advance(120)  # and it keeps waiting: nothing approves it on a later step
    for _ in range(3):
        lab.loop.step()
    [incident] = lab.incidents()
    assert lab.machine.incident(incident.id).state is IncidentState.AWAITING_APPROVAL
    plan = lab.machine.current_plan(incident.id)
    assert plan is not None and plan.status is PlanStatus.PROPOSED
    assert plan.decided_by is None
    assert not plan.runs_unattended and any(reason in r for r in plan.held), plan.held
    # Only the hold keeps it waiting: the policy alone would have run a plan of this risk.
    assert lab.policy.for_namespace(HOTEL).runs_without_approval(plan.risk), plan.risk
    assert lab.transactions() == []
    assert lab.specs() == before
    timeline = lab.timeline(incident.id)
    waiting = [m for s, m in timeline if s == IncidentState.AWAITING_APPROVAL.value]
    assert "Plan waiting for approval" in waiting[0], timeline
    assert not any(s == IncidentState.EXECUTING.value for s, _ in timeline), timeline
    if case == "suggestion":
        assert plan.suggestions and "not seen before in this cluster" in plan.suggestions[0]


def test_the_same_fault_unheld_runs_without_approval(make_lab: MakeLab) -> None:
    # The control: without a hold, `auto-low-risk` runs the plan (the test above is not
    # vacuous).
    lab = make_lab(policy("auto-low-risk"))
    fault("scale-to-zero").inject(lab.world, app=HOTEL)
    lab.run_until(lambda: bool(lab.transactions()))
    [incident] = lab.incidents()
    executed = [p for p in lab.machine.plans(incident.id) if p.decided_by is not None]
    assert executed and executed[0].decided_by == "policy:auto-low-risk"
    assert executed[0].held == () and executed[0].suggestions == ()


# ------------------------------------------------------------- cleared by planning time


def _heal(
    lab: Lab, injection: Injection, *, metrics_down: bool, healed: dict[str, Any] | None = None
) -> Callable[[], None]:
    """What happens while the diagnoser works: the fault goes away and the scope heals (the
    blip passes), and — for the incomplete case — Prometheus goes down. `healed` receives
    the objects' specs as the blip left them."""

    def after() -> None:
        fault(injection.fault_id).recover(lab.world, injection)
        lab.world.wait_healthy()
        lab.world.advance(300)  # long enough for every alert about it to resolve
        lab.metrics.down = metrics_down
        if healed is not None:
            healed.update(lab.specs())

    return after


def test_symptoms_cleared_fully_measured_close_as_transient_without_a_plan(
    make_lab: MakeLab,
) -> None:
    lab = make_lab(policy("autonomous"))
    injection = fault("wrong-target-port").inject(lab.world, app=HOTEL)
    lab.diagnoser.after = _heal(lab, injection, metrics_down=False)
    lab.run_until(
        lambda: bool(lab.incidents()) and all(lab.loop.ended(i.id) for i in lab.incidents())
    )
    [incident] = lab.incidents()
    assert lab.machine.incident(incident.id).state is IncidentState.CLOSED
    states = [s for s, _ in lab.timeline(incident.id)]
    assert "planning" in states and "awaiting_approval" not in states, states
    assert lab.machine.plans(incident.id) == []
    assert lab.transactions() == []
    [resolved] = [m for s, m in lab.timeline(incident.id) if s == IncidentState.RESOLVED.value]
    assert "Transient" in resolved and "fully measured" in resolved and "no plan" in resolved


def test_symptoms_cleared_but_metrics_unreadable_is_not_transient(make_lab: MakeLab) -> None:
    lab = make_lab(policy("propose"))
    injection = fault("wrong-target-port").inject(lab.world, app=HOTEL)
    healed: dict[str, Any] = {}
    lab.diagnoser.after = _heal(lab, injection, metrics_down=True, healed=healed)

    def past_planning() -> bool:
        found = lab.incidents()
        return bool(found) and all(
            s not in ("detected", "diagnosing", "diagnosed", "planning")
            for i in found
            for s in [lab.machine.incident(i.id).state.value]
        )

    lab.run_until(past_planning)
    [incident] = lab.incidents()
    timeline = lab.timeline(incident.id)
    assert not any("Transient" in m for _, m in timeline), timeline
    assert not any(s == IncidentState.RESOLVED.value for s, _ in timeline), timeline
    assert lab.machine.incident(incident.id).state is not IncidentState.CLOSED
    assert lab.transactions() == []
    assert healed and lab.specs() == healed


# ------------------------------------------------------------- no symptom, no write


def test_a_benign_release_and_a_brief_blip_get_no_write_under_auto_low_risk(
    make_lab: MakeLab,
) -> None:
    """`profile` gets a working release (1.0 → 1.1, as `kubectl set image` would); a minute
    later the single pod of `rate` is deleted, a real but brief blip while its replacement
    starts. The release is the most recent change, but `profile` never shows a symptom:
    nothing may change it, and by planning time the blip is over. Zero writes."""
    lab = make_lab(policy("auto-low-risk"))
    profile = lab.world.api.get("Deployment", HOTEL, "profile")
    assert profile is not None
    container = profile["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "ghcr.io/lab/hotel/hotelreservation:1.0"
    release = {"name": container["name"], "image": "ghcr.io/lab/hotel/hotelreservation:1.1"}
    lab.world.api.patch(
        "Deployment",
        HOTEL,
        "profile",
        {"spec": {"template": {"spec": {"containers": [release]}}}},
        patch_type="strategic",
        field_manager="kubectl-set",
    )
    lab.world.wait_healthy()
    lab.world.advance(60)
    lab.loop.step()  # the journal records the release
    released = lab.specs()
    [pod] = lab.world.api.list("Pod", HOTEL, label_selector="io.kompose.service=rate")
    lab.world.api.delete("Pod", HOTEL, pod["metadata"]["name"])
    # Fifteen lab minutes of the loop: detection, diagnosis, planning, whatever follows.
    assert not lab.loop.run(until=lambda: False, timeout_s=900, step_s=5)
    assert lab.incidents(), "the blip is real: it opens an incident"
    assert lab.transactions() == []
    decided = [
        p for i in lab.incidents() for p in lab.machine.plans(i.id) if p.decided_by is not None
    ]
    assert decided == []
    assert lab.specs() == released
    for incident in lab.incidents():
        states = [s for s, _ in lab.timeline(incident.id)]
        assert IncidentState.EXECUTING.value not in states, lab.timeline(incident.id)
