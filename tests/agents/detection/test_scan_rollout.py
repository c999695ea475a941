"""A rollout whose new pods are refused while the old ones keep serving is a finding: the
change someone rolled out never runs. The usual rolling-update noise is not."""

from __future__ import annotations

from dataclasses import replace

from agents.detection.scan import Scanner
from agents.model import AlertStatus, EventRecord, WorkloadState
from lab.clock import LabClock
from tests.agents.detection.fakes import FakeCluster, FakeMetrics, at, pod, workload

HOTEL = "hotel-reservation"
SHOP = "online-shop"


def restarting(name: str, namespace: str, replicas: int = 1, **changes: object) -> WorkloadState:
    """A Deployment after `kubectl rollout restart` (generation 2), every replica available
    unless `changes` say otherwise."""
    base = workload(name, namespace=namespace, replicas=replicas)
    base = replace(base, generation=2, observed_generation=2)
    return replace(base, **changes)  # type: ignore[arg-type]


def refused(namespace: str, replica_set: str, seen_s: float, used: int) -> EventRecord:
    return EventRecord(
        namespace=namespace,
        object_kind="ReplicaSet",
        object_name=replica_set,
        reason="FailedCreate",
        message=f'pods "{replica_set}-x7k2p" is forbidden: exceeded quota: compute-quota, '
        f"requested: pods=1, used: pods={used}, limited: pods={used}",
        type="Warning",
        count=int(seen_s // 5) + 1,
        last_seen=at(seen_s),
    )


def scanner_for(cluster: FakeCluster, clock: LabClock, namespace: str) -> Scanner:
    return Scanner(reader=cluster, metrics=FakeMetrics(), clock=clock, namespaces=[namespace])


def test_a_restart_refused_by_a_quota_while_the_old_pod_serves_fires_once_it_holds(
    cluster: FakeCluster, clock: LabClock
) -> None:
    cluster.workload_states[HOTEL] = [
        workload("frontend", namespace=HOTEL),
        workload("geo", namespace=HOTEL),
        restarting("search", HOTEL, updated_replicas=0),
    ]
    cluster.pod_states[HOTEL] = [
        pod("search-6b7f9c-old", namespace=HOTEL, app="search"),
        pod("frontend-5d9c7f-a", namespace=HOTEL, app="frontend"),
    ]
    scanner = scanner_for(cluster, clock, HOTEL)
    seen = []
    for step in range(14):  # the ReplicaSet retries every few seconds
        cluster.event_records[HOTEL] = [refused(HOTEL, "search-7d4b8f", step * 5.0, used=19)]
        seen.append(scanner.scan())
        clock.advance(5)
    assert all(found == [] for found in seen[:12])  # 55 s: not yet a stall
    (alert,) = seen[12]
    assert (alert.name, alert.service, alert.severity) == (
        "WorkloadFailedCreate",
        "search",
        "warning",  # the old pod still serves
    )
    assert alert.starts_at == at(0)
    summary = alert.annotations["summary"]
    assert "(quota)" in summary and "stalled at 0/1 updated" in summary

    # Someone raises the quota: the new pod comes up, the rollout completes.
    cluster.workload_states[HOTEL][2] = restarting("search", HOTEL)
    clock.advance(5)
    (resolved,) = scanner.scan()
    assert resolved.status is AlertStatus.RESOLVED


def test_a_rollout_past_its_progress_deadline_with_a_replica_failure_fires_at_once(
    cluster: FakeCluster, clock: LabClock
) -> None:
    # The events aged out; the Deployment's conditions still say why it is stuck.
    cluster.workload_states[SHOP] = [
        workload("frontend", namespace=SHOP),
        restarting(
            "checkout",
            SHOP,
            replicas=2,
            updated_replicas=1,
            conditions={"Available": "True", "Progressing": "False", "ReplicaFailure": "True"},
        ),
    ]
    (alert,) = scanner_for(cluster, clock, SHOP).scan()
    assert (alert.name, alert.service) == ("WorkloadFailedCreate", "checkout")
    assert "stalled at 1/2 updated" in alert.annotations["summary"]


def test_a_refusal_that_clears_within_the_rollout_is_not_an_alert(
    cluster: FakeCluster, clock: LabClock
) -> None:
    # An admission webhook refused one surge pod; the retry went through 20 s later.
    cluster.workload_states[SHOP] = [restarting("cart", SHOP, replicas=2, updated_replicas=1)]
    cluster.event_records[SHOP] = [
        EventRecord(
            namespace=SHOP,
            object_kind="ReplicaSet",
            object_name="cart-66d8b9",
            reason="FailedCreate",
            message='Internal error occurred: failed calling webhook "validate.kyverno.svc": '
            "context deadline exceeded",
            type="Warning",
            count=1,
            last_seen=at(0),
        )
    ]
    scanner = scanner_for(cluster, clock, SHOP)
    for _ in range(4):
        assert scanner.scan() == []
        clock.advance(5)
    cluster.workload_states[SHOP] = [restarting("cart", SHOP, replicas=2, updated_replicas=2)]
    for _ in range(30):  # the event stays in the window, the rollout is done
        assert scanner.scan() == []
        clock.advance(5)


def test_a_refusal_on_a_workload_short_of_replicas_is_critical_at_once(
    cluster: FakeCluster, clock: LabClock
) -> None:
    cluster.workload_states[SHOP] = [
        restarting("checkout", SHOP, replicas=1, available_replicas=0, updated_replicas=0)
    ]
    cluster.event_records[SHOP] = [refused(SHOP, "checkout-59c6d", 0.0, used=24)]
    (alert,) = scanner_for(cluster, clock, SHOP).scan()
    assert (alert.name, alert.severity) == ("WorkloadFailedCreate", "critical")
