"""Settling: an alert raised by a disruption the cluster has already repaired (a deleted pod
replaced, every pod Ready again) is held once, and opens nothing if it stops firing; a fault's
alert opens its incident when the hold ends, and a crash loop is never held."""

from __future__ import annotations

from dataclasses import replace

from agents.detection import Detector, DetectorConfig, Disposition, IncidentOpened
from agents.detection.settling import Settling
from agents.model import RevisionInfo, Scope
from agents.severity import SeverityMeter
from lab.clock import LabClock
from storage import Store
from tests.agents.detection.fakes import FakeCluster, FakeMetrics, alert, at, pod, workload


def _detector(
    store: Store, meter: SeverityMeter, clock: LabClock, cluster: FakeCluster
) -> Detector:
    return Detector(
        store=store,
        meter=meter,
        clock=clock,
        cluster="lab",
        config=DetectorConfig(settle_s=90.0),
        settling=Settling(cluster, window_s=90.0),
    )


def _namespace(
    cluster: FakeCluster, *, geo_born: float, geo_restarts: int = 0, rollout: bool = False
) -> None:
    """frontend's pod from the namespace's first deploy; geo's pod born at `geo_born`, from
    its first ReplicaSet (a replacement) or, with `rollout`, from a new one born with it."""
    cluster.revisions[("hotel", "geo")] = [
        RevisionInfo(
            revision=2 if rollout else 1,
            images={"geo": "hotel/geo:1.0"},
            replica_set="geo-5d9c7f",
            created_at=at(geo_born if rollout else -600),
        )
    ]
    cluster.workload_states["hotel"] = [workload("frontend"), workload("geo")]
    cluster.pod_states["hotel"] = [
        replace(pod("frontend-1", app="frontend"), created_at=at(-600)),
        replace(pod("geo-2", app="geo", restarts=geo_restarts), created_at=at(geo_born)),
    ]


def test_a_blip_a_replaced_pod_already_repaired_opens_no_incident(
    store: Store, meter: SeverityMeter, clock: LabClock, cluster: FakeCluster, metrics: FakeMetrics
) -> None:
    _namespace(cluster, geo_born=0)  # geo's pod was deleted at 0 s and replaced at once
    d = _detector(store, meter, clock, cluster)
    clock.advance(10)
    blip = alert("ServiceCallErrors", service="frontend", starts_at=at(2))
    metrics.alerts = [blip]
    [disposition] = d.ingest([blip]).dispositions
    assert disposition.disposition is Disposition.SETTLING
    clock.advance(40)  # Alertmanager re-sends it while the one-minute window still sees it
    assert d.ingest([blip]).dispositions[0].disposition is Disposition.SETTLING
    assert d.tick().events == ()
    metrics.alerts = []  # its window no longer reaches the blip; no resolution was sent yet
    clock.advance(41)  # 91 s: the hold is over
    detection = d.tick()
    assert [x.disposition for x in detection.dispositions] == [Disposition.RECORDED]
    assert detection.events == () and store.incidents.list_open() == []


def test_a_fault_s_alert_still_firing_after_the_hold_opens_its_incident(
    store: Store, meter: SeverityMeter, clock: LabClock, cluster: FakeCluster, metrics: FakeMetrics
) -> None:
    _namespace(cluster, geo_born=0)
    d = _detector(store, meter, clock, cluster)
    clock.advance(10)
    fault = alert("ServiceCallErrors", service="frontend", starts_at=at(5))
    metrics.alerts = [fault]
    assert d.ingest([fault]).dispositions[0].disposition is Disposition.SETTLING
    clock.advance(81)
    events = d.tick().events
    assert len(events) == 1 and isinstance(events[0], IncidentOpened)
    # Held once only: the incident holds it now, and a later report just updates it.
    clock.advance(5)
    assert d.ingest([fault]).dispositions[0].disposition is Disposition.UPDATED


def test_a_crash_loop_a_fresh_deploy_or_an_old_pod_is_never_a_reason_to_hold(
    store: Store, meter: SeverityMeter, clock: LabClock, cluster: FakeCluster, metrics: FakeMetrics
) -> None:
    clock.advance(10)
    settling = Settling(cluster, window_s=90.0)
    _namespace(cluster, geo_born=0, geo_restarts=3)  # it keeps dying: not repaired
    assert settling.repaired(_scope(), clock.now()) is None
    _namespace(cluster, geo_born=-600)  # as old as the namespace: a first deploy
    assert settling.repaired(_scope(), clock.now()) is None
    _namespace(cluster, geo_born=-120)  # replaced two minutes ago: settled already
    assert settling.repaired(_scope(), clock.now()) is None
    _namespace(cluster, geo_born=0, rollout=True)  # a new revision: a spec change, maybe the fault
    assert settling.repaired(_scope(), clock.now()) is None
    _namespace(cluster, geo_born=0)
    found = settling.repaired(_scope(), clock.now())
    assert found is not None and found.workload == "geo" and found.settled_by == at(90)
    cluster.failing.add("hotel")  # unreadable: no reason to hold anything
    assert settling.repaired(_scope(), clock.now()) is None


def test_an_alert_older_than_the_disruption_or_a_declared_incident_is_not_held(
    store: Store, meter: SeverityMeter, clock: LabClock, cluster: FakeCluster, metrics: FakeMetrics
) -> None:
    _namespace(cluster, geo_born=0)
    d = _detector(store, meter, clock, cluster)
    clock.advance(10)
    older = alert("ServiceCallErrors", service="frontend", starts_at=at(-60))
    metrics.alerts = [older]
    events = d.ingest([older]).events
    assert len(events) == 1 and isinstance(events[0], IncidentOpened)

    # A person's declaration is never held, whatever the cluster repaired.
    store2_alert = alert("Declared", service="geo", starts_at=at(10), source="declared")
    assert d.ingest([store2_alert]).dispositions[0].disposition is not Disposition.SETTLING


def _scope() -> Scope:
    return Scope(cluster="lab", namespace="hotel")
