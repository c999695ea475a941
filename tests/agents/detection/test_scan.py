"""The periodic scan: it fires on real failures, not on noise, and resolves what it fired."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import cast

import pytest

from agents.detection import Detector, DetectorConfig, Disposition
from agents.detection.scan import Scanner
from agents.incident.headless import HeadlessLoop
from agents.incident.machine import IncidentMachine
from agents.model import Alert, AlertStatus, EventRecord
from agents.severity import SeverityMeter
from lab.clock import LabClock
from storage import Store
from tests.agents.detection.fakes import (
    FakeCluster,
    FakeMetrics,
    at,
    pod,
    signals,
    workload,
)


@pytest.fixture
def scanner(cluster: FakeCluster, metrics: FakeMetrics, clock: LabClock) -> Scanner:
    cluster.workload_states["hotel"] = [workload("geo"), workload("frontend", replicas=2)]
    return Scanner(reader=cluster, metrics=metrics, clock=clock, namespaces=["hotel"])


def names(alerts: list[Alert], status: AlertStatus = AlertStatus.FIRING) -> list[str]:
    return sorted(f"{a.name}:{a.service}" for a in alerts if a.status is status)


def test_a_crash_loop_fires_at_once_with_a_stable_fingerprint(
    scanner: Scanner, cluster: FakeCluster, metrics: FakeMetrics, clock: LabClock
) -> None:
    cluster.pod_states["hotel"] = [
        pod("geo-5d9c7f-a", ready=False, restarts=3, state="waiting", reason="CrashLoopBackOff"),
        pod("geo-5d9c7f-b", ready=False, restarts=4, state="waiting", reason="CrashLoopBackOff"),
    ]
    (alert,) = scanner.scan()
    assert (alert.name, alert.service, alert.severity, alert.source) == (
        "ContainerCrashLooping",
        "geo",
        "critical",
        "scan",
    )
    assert alert.namespace == "hotel"
    assert alert.labels["cluster"] == "lab"
    assert alert.starts_at == at(0)
    assert "crash-looping (3 restarts" in alert.annotations["summary"]
    # The same condition is the same alert on the next scan and for another scanner.
    clock.advance(30)
    (again,) = scanner.scan()
    assert (again.fingerprint, again.starts_at) == (alert.fingerprint, at(0))
    other = Scanner(reader=cluster, metrics=metrics, clock=clock, namespaces=["hotel"])
    assert other.scan()[0].fingerprint == alert.fingerprint


def test_noise_fires_nothing(scanner: Scanner, cluster: FakeCluster, clock: LabClock) -> None:
    cluster.pod_states["hotel"] = [
        # one restart that recovered
        pod("geo-5d9c7f-a", restarts=1, last_reason="Error"),
        # one crash, in its first back-off
        pod("geo-5d9c7f-b", ready=False, restarts=1, state="waiting", reason="CrashLoopBackOff"),
        # an OOM kill long ago, running fine since
        pod("frontend-7c-a", app="frontend", restarts=5, last_reason="OOMKilled"),
        pod("frontend-7c-b", app="frontend", phase="Succeeded", ready=False),
    ]
    cluster.event_records["hotel"] = [
        EventRecord(
            namespace="hotel",
            object_kind="Pod",
            object_name="geo-5d9c7f-a",
            reason=reason,
            message=message,
            type="Warning",
            count=3,
            last_seen=at(0),
        )
        for reason, message in [
            ("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503"),
            ("BackOff", "Back-off pulling image"),
            ("FailedScheduling", "0/3 nodes are available"),
        ]
    ]
    for _ in range(10):
        assert scanner.scan() == []
        clock.advance(30)
        # The crashed container comes back after its back-off and stays up.
        cluster.pod_states["hotel"][1] = pod("geo-5d9c7f-b", restarts=1, last_reason="Error")


def test_a_readiness_blip_is_not_an_alert_but_a_lasting_one_is(
    scanner: Scanner, cluster: FakeCluster, clock: LabClock
) -> None:
    cluster.pod_states["hotel"] = [pod("geo-5d9c7f-a", ready=False)]
    assert scanner.scan() == []
    clock.advance(30)
    cluster.pod_states["hotel"] = [pod("geo-5d9c7f-a", ready=True)]
    assert scanner.scan() == []
    clock.advance(30)
    cluster.pod_states["hotel"] = [pod("geo-5d9c7f-a", ready=False)]
    scanner.scan()
    for _ in range(3):
        clock.advance(30)
        assert scanner.scan() == []  # 90 s < 120 s
    clock.advance(30)
    (alert,) = scanner.scan()
    assert (alert.name, alert.service, alert.starts_at) == ("PodNotReady", "geo", at(60))
    clock.advance(30)
    cluster.pod_states["hotel"] = [pod("geo-5d9c7f-a", ready=True)]
    (resolved,) = scanner.scan()
    assert resolved.status is AlertStatus.RESOLVED
    assert (resolved.fingerprint, resolved.ends_at) == (alert.fingerprint, at(210))
    clock.advance(30)
    assert scanner.scan() == []  # resolved once


def test_image_pull_and_create_errors(scanner: Scanner, cluster: FakeCluster) -> None:
    cluster.pod_states["hotel"] = [
        pod("geo-5d9c7f-a", ready=False, state="waiting", reason="ImagePullBackOff"),
        pod("frontend-7c-a", app="frontend", ready=False, state="waiting", reason="ErrImagePull"),
        pod(
            "frontend-7c-b",
            app="frontend",
            ready=False,
            state="waiting",
            reason="CreateContainerConfigError",
        ),
    ]
    assert names(scanner.scan()) == [
        "ContainerCreateFailing:frontend",
        "ContainerImagePullFailing:frontend",
        "ContainerImagePullFailing:geo",
    ]


def test_oom_kills_with_recent_restarts(
    scanner: Scanner, cluster: FakeCluster, clock: LabClock
) -> None:
    cluster.pod_states["hotel"] = [pod("geo-5d9c7f-a", restarts=2, last_reason="OOMKilled")]
    assert scanner.scan() == []  # no restart seen happening yet
    clock.advance(60)
    cluster.pod_states["hotel"] = [pod("geo-5d9c7f-a", restarts=3, last_reason="OOMKilled")]
    assert names(scanner.scan()) == ["ContainerOOMKilled:geo"]
    clock.advance(700)  # no more restarts within the window: it stopped
    assert names(scanner.scan(), AlertStatus.RESOLVED) == ["ContainerOOMKilled:geo"]


def test_unschedulable_pods_and_unavailable_replicas_after_their_grace(
    scanner: Scanner, cluster: FakeCluster, clock: LabClock
) -> None:
    cluster.pod_states["hotel"] = [
        pod(
            "frontend-7c-a",
            app="frontend",
            phase="Pending",
            ready=False,
            unschedulable="0/3 nodes are available: 3 node(s) didn't match node selector",
        )
    ]
    cluster.workload_states["hotel"] = [
        workload("geo"),
        workload("frontend", replicas=2, available=1),
    ]
    assert scanner.scan() == []
    clock.advance(60)
    assert names(scanner.scan()) == ["PodUnschedulable:frontend"]
    clock.advance(120)
    fired = scanner.scan()
    assert names(fired) == ["PodUnschedulable:frontend", "WorkloadReplicasUnavailable:frontend"]
    assert next(a for a in fired if a.name.startswith("Workload")).severity == "warning"


def test_a_rollout_dip_is_not_an_alert(
    scanner: Scanner, cluster: FakeCluster, clock: LabClock
) -> None:
    cluster.workload_states["hotel"] = [workload("frontend", replicas=3, available=2)]
    for _ in range(5):
        assert scanner.scan() == []
        clock.advance(30)
    cluster.workload_states["hotel"] = [workload("frontend", replicas=3)]
    assert scanner.scan() == []


def _failed_create(seen_s: float) -> EventRecord:
    return EventRecord(
        namespace="hotel",
        object_kind="ReplicaSet",
        object_name="frontend-7c9d8",
        reason="FailedCreate",
        message='pods "frontend-7c9d8-x" is forbidden: exceeded quota: compute, '
        "requested: cpu=500m, used: cpu=2, limited: cpu=2",
        type="Warning",
        count=12,
        last_seen=at(seen_s),
    )


def test_failed_create_while_the_workload_is_short(
    scanner: Scanner, cluster: FakeCluster, clock: LabClock
) -> None:
    cluster.event_records["hotel"] = [_failed_create(0)]
    cluster.workload_states["hotel"] = [workload("frontend", replicas=2, available=0)]
    (alert,) = scanner.scan()
    assert (alert.name, alert.service) == ("WorkloadFailedCreate", "frontend")
    assert "(quota)" in alert.annotations["summary"]
    # The pods came up: the old event no longer counts.
    clock.advance(30)
    cluster.workload_states["hotel"] = [workload("frontend", replicas=2)]
    assert names(scanner.scan(), AlertStatus.RESOLVED) == ["WorkloadFailedCreate:frontend"]
    # An event older than the window does not count either.
    cluster.workload_states["hotel"] = [workload("frontend", replicas=2, available=0)]
    clock.advance(700)
    assert names(scanner.scan()) == []


def test_slo_burn_over_the_window(
    scanner: Scanner, metrics: FakeMetrics, cluster: FakeCluster
) -> None:
    metrics.signals["hotel"] = {
        "frontend": signals("frontend", errors=0.4),
        "search": signals("search", errors=0.08, p99=2500),
        "idle": signals("idle", rate=0.0, errors=1.0),
        "geo": signals("geo", errors=0.01, p99=100),
    }
    fired = scanner.scan()
    assert names(fired) == [
        "ServiceHighErrorRatio:frontend",
        "ServiceHighErrorRatio:search",
        "ServiceHighLatency:search",
    ]
    severities = {(a.name, a.service): a.severity for a in fired}
    assert severities[("ServiceHighErrorRatio", "frontend")] == "critical"
    assert severities[("ServiceHighErrorRatio", "search")] == "warning"
    assert metrics.windows == [300]


def test_a_failed_read_keeps_the_alerts_as_they_were(
    scanner: Scanner, cluster: FakeCluster, metrics: FakeMetrics, clock: LabClock
) -> None:
    cluster.pod_states["hotel"] = [
        pod("geo-5d9c7f-a", ready=False, restarts=3, state="waiting", reason="CrashLoopBackOff")
    ]
    metrics.signals["hotel"] = {"frontend": signals("frontend", errors=0.4)}
    before = names(scanner.scan())
    clock.advance(30)
    cluster.failing.add("hotel")
    metrics.fail = True
    assert names(scanner.scan()) == before
    assert names(scanner.scan(), AlertStatus.RESOLVED) == []
    clock.advance(30)
    cluster.failing.clear()
    metrics.fail = False
    cluster.pod_states["hotel"] = [pod("geo-5d9c7f-a")]
    metrics.signals["hotel"] = {}
    assert names(scanner.scan(), AlertStatus.RESOLVED) == sorted(before)


def test_reads_stay_in_the_covered_namespaces(cluster: FakeCluster, clock: LabClock) -> None:
    cluster.pod_states["shop"] = [
        pod(
            "cart-1",
            namespace="shop",
            app="cart",
            ready=False,
            restarts=5,
            state="waiting",
            reason="CrashLoopBackOff",
        )
    ]
    scanner = Scanner(reader=cluster, metrics=None, clock=clock, namespaces=["hotel"])
    assert scanner.scan() == []
    assert names(scanner.scan(["shop"])) == ["ContainerCrashLooping:cart-1"]


def test_scan_to_incident(
    scanner: Scanner,
    cluster: FakeCluster,
    store: Store,
    meter: SeverityMeter,
    clock: LabClock,
) -> None:
    detector = Detector(
        store=store,
        meter=meter,
        clock=clock,
        cluster="lab",
        config=DetectorConfig(grace_s={"scan": 30.0}),
    )
    cluster.pod_states["hotel"] = [
        pod("geo-5d9c7f-a", ready=False, restarts=3, state="waiting", reason="CrashLoopBackOff")
    ]
    first = detector.ingest(scanner.scan())
    assert [d.disposition for d in first.dispositions] == [Disposition.PENDING]
    clock.advance(timedelta(seconds=30).total_seconds())
    second = detector.ingest(scanner.scan())
    (incident,) = second.opened
    assert (incident.service, incident.source, incident.scope.key) == ("geo", "scan", "lab/hotel")
    assert incident.mu0 == 3.0  # nothing measured yet (no metrics): the critical alert's weight


def test_the_headless_loop_spaces_the_scan_as_the_bots_scheduler_does(
    scanner: Scanner, cluster: FakeCluster, clock: LabClock
) -> None:
    """The bench scans every `STRATUS_SCAN_INTERVAL_S` (30 s), not at every 5 s step: a scan
    at every step would detect sooner than a deployment does."""
    cluster.pod_states["hotel"] = [
        pod("geo-5d9c7f-a", ready=False, restarts=3, state="waiting", reason="CrashLoopBackOff")
    ]
    loop = HeadlessLoop(
        machine=cast(IncidentMachine, SimpleNamespace(store=None, clock=clock)),
        detector=cast(Detector, None),  # collect_alerts reads the sources only
        clock=clock,
        reader=cluster,
        scanner=scanner,
        scan_every_s=30,
    )
    scanned = []
    for _ in range(13):  # a minute in 5 s steps
        scanned.append(len(loop.collect_alerts()))
        clock.advance(5)
    assert scanned == [1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]
    every_step = HeadlessLoop(
        machine=cast(IncidentMachine, SimpleNamespace(store=None, clock=clock)),
        detector=cast(Detector, None),
        clock=clock,
        reader=cluster,
        scanner=scanner,
    )
    assert [len(every_step.collect_alerts()) for _ in range(3)] == [1, 1, 1]
