"""After an incident closes, alerts that were already firing stay that incident's: they open
no new incident. A condition that starts after the close — or clears and comes back — does.
After an escalated close, the incident's own alerts stay with the person it was handed to for
a cooldown even when their source reports a later start."""

from __future__ import annotations

from datetime import timedelta

from agents.detection import Detector, DetectorConfig, Disposition
from agents.detection.scan import Scanner
from agents.model import Alert, AlertStatus
from agents.severity import SeverityMeter
from lab.clock import LabClock
from storage import Store
from tests.agents.detection.fakes import (
    FakeCluster,
    FakeMetrics,
    alert,
    at,
    pod,
    signals,
    workload,
)

HOTEL_SERVICES = ["frontend", "search", "geo", "rate", "profile", "reservation", "user"]
SHOP_SERVICES = ["frontend-proxy", "frontend", "cart", "checkout", "currency", "ad"]


def detector(store: Store, meter: SeverityMeter, clock: LabClock, **config: object) -> Detector:
    return Detector(
        store=store,
        meter=meter,
        clock=clock,
        cluster="lab",
        config=DetectorConfig(**config),  # type: ignore[arg-type]
    )


def close(store: Store, incident_id: str, clock: LabClock, *, escalated: bool = False) -> None:
    """Close an incident the way the state machine does: through RESOLVED or ESCALATED."""
    state = "escalated" if escalated else "resolved"
    assert store.incidents.transition(incident_id, state, at=clock.now(), message=state)
    assert store.incidents.close(incident_id, at=clock.now(), message=f"Closed ({state})")


def firing(d: Detector, *alerts: Alert) -> dict[str, Disposition | None]:
    result = d.ingest(list(alerts))
    return {a.name: result.of(a.fingerprint) for a in alerts}


def test_alerts_still_firing_after_a_fix_open_nothing_and_are_recorded_once(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock)
    # geo's Service refuses connections: its callers' error ratios (5-minute windows) fire.
    errors = alert("ServiceHighErrorRatio", service="search", severity="critical")
    latency = alert("ServiceHighLatency", service="frontend", starts_at=at(5))
    clock.advance(10)
    (first,) = d.ingest([errors, latency]).opened
    clock.advance(120)  # fixed and validated; the windows still hold the failure
    close(store, first.id, clock)

    for _ in range(12):  # a minute of reports after the close, every 5 s
        clock.advance(5)
        assert firing(d, errors, latency) == {
            "ServiceHighErrorRatio": Disposition.CLOSED,
            "ServiceHighLatency": Disposition.CLOSED,
        }
        assert d.tick().opened == ()
    assert store.incidents.list_open() == []
    records = [r.detail for r in store.audit.query(verb="alert")]
    assert [(r["alertname"], r["disposition"], r["incident"]) for r in records] == [
        ("ServiceHighErrorRatio", "closed", first.id),
        ("ServiceHighLatency", "closed", first.id),
    ]


def test_a_condition_that_starts_after_the_close_opens_a_new_incident(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock)
    lagging = alert("ServiceHighErrorRatio", service="frontend", namespace="online-shop")
    clock.advance(10)
    (first,) = d.ingest([lagging]).opened
    clock.advance(90)
    close(store, first.id, clock)

    clock.advance(30)
    crash = alert(
        "ContainerCrashLooping",
        service="currency",
        namespace="online-shop",
        severity="critical",
        starts_at=at(125),
    )
    result = d.ingest([lagging, crash])
    assert result.of(lagging.fingerprint) is Disposition.CLOSED
    assert result.of(crash.fingerprint) is Disposition.OPENED
    (second,) = result.opened
    assert second.service == "currency"
    # The new incident holds only the new failure's alert; the lagging one is the old one's.
    assert [a.alertname for a in store.incidents.alerts(second.id)] == ["ContainerCrashLooping"]
    # Once an incident is open again, the old alert joins it like any alert of its scope.
    clock.advance(5)
    assert d.ingest([lagging]).of(lagging.fingerprint) is Disposition.ATTACHED


def test_the_scans_slo_condition_stays_with_the_closed_incident_until_it_clears_then_may_return(
    store: Store,
    meter: SeverityMeter,
    clock: LabClock,
    cluster: FakeCluster,
    metrics: FakeMetrics,
) -> None:
    """The scan's alert starts when the scan first saw the condition: a window that still
    holds the failure after the close is the old incident's; the condition cleared and seen
    again ten minutes later is a new failure."""
    cluster.workload_states["hotel"] = [workload(s) for s in HOTEL_SERVICES]
    cluster.pod_states["hotel"] = [pod(f"{s}-5d9c7f-a", app=s) for s in HOTEL_SERVICES]
    scanner = Scanner(reader=cluster, metrics=metrics, clock=clock, namespaces=["hotel"])
    d = detector(store, meter, clock)
    healthy = {s: signals(s) for s in HOTEL_SERVICES}

    def step(seconds: float = 5) -> list[Alert]:
        clock.advance(seconds)
        found = scanner.scan()
        d.ingest(found)
        d.tick()
        return found

    metrics.signals["hotel"] = {**healthy, "search": signals("search", errors=0.3)}
    (condition,) = step()
    assert condition.starts_at == at(5)
    while not store.incidents.list_open():
        step()
    (first,) = store.incidents.list_open()
    assert (first.opened_at, first.service) == (at(35), "search")  # after the scan's grace
    for _ in range(6):
        step()
    close(store, first.id, clock)  # at 65 s

    # The 5-minute window still holds the failure: the same alert, same start, opens nothing.
    for _ in range(24):
        (still,) = step()
        assert (still.fingerprint, still.starts_at) == (condition.fingerprint, at(5))
    assert store.incidents.list_open() == []

    metrics.signals["hotel"] = healthy  # the window clears
    (resolved,) = step()
    assert resolved.status is AlertStatus.RESOLVED
    step(600)
    metrics.signals["hotel"] = {**healthy, "search": signals("search", errors=0.4)}
    (again,) = step()
    assert again.starts_at == clock.now()
    while not store.incidents.list_open():
        step()
    (second,) = store.incidents.list_open()
    assert second.id != first.id
    assert (second.opened_at - again.starts_at).total_seconds() == 30  # the scan's grace only


def test_after_an_escalated_close_its_alerts_stay_handed_over_for_the_cooldown(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock, handover_cooldown_s=1800)
    # A database that refuses its clients: nothing Stratus may undo, so it escalated.
    refused = alert("ServiceHighErrorRatio", service="geo", severity="critical")
    clock.advance(10)
    (first,) = d.ingest([refused]).opened
    clock.advance(60)
    close(store, first.id, clock, escalated=True)  # at 70 s

    # Its source restarted and reports the very same alert with a later start.
    clock.advance(30)
    restarted = alert("ServiceHighErrorRatio", service="geo", severity="critical", starts_at=at(95))
    assert firing(d, restarted) == {"ServiceHighErrorRatio": Disposition.HANDED_OVER}
    assert [a.name for a in d.waiting()] == ["ServiceHighErrorRatio"]
    clock.advance(1769)  # 1,799 s after the close
    assert d.tick().opened == ()
    assert store.incidents.list_open() == []

    # The cooldown over, the handed-over alert that still fires may open an incident again
    # (a reminder that the failure outlived the hand-over).
    clock.advance(1)
    (reopened,) = d.tick().opened
    assert [a.alertname for a in store.incidents.alerts(reopened.id)] == ["ServiceHighErrorRatio"]
    records = [
        r.detail["disposition"]
        for r in store.audit.query(verb="alert")
        if r.detail["fingerprint"] == refused.fingerprint
    ]
    assert records == ["handed_over"]


def test_after_an_escalated_close_a_different_failure_is_news_at_once(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock, handover_cooldown_s=1800)
    refused = alert("ServiceHighErrorRatio", service="geo", severity="critical")
    clock.advance(10)
    (first,) = d.ingest([refused]).opened
    clock.advance(60)
    close(store, first.id, clock, escalated=True)
    clock.advance(200)
    other = alert("ContainerCrashLooping", service="rate", severity="critical", starts_at=at(250))
    result = d.ingest([refused, other])
    assert result.of(refused.fingerprint) is Disposition.CLOSED
    assert result.of(other.fingerprint) is Disposition.OPENED


def test_an_escalated_incidents_alert_that_resolved_and_fires_again_is_news(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock, handover_cooldown_s=1800, cooldown_s=300)
    crash = alert(
        "ContainerCrashLooping", service="cart", namespace="online-shop", severity="critical"
    )
    clock.advance(10)
    (first,) = d.ingest([crash]).opened
    clock.advance(60)
    close(store, first.id, clock, escalated=True)

    clock.advance(10)
    gone = alert(
        "ContainerCrashLooping",
        service="cart",
        namespace="online-shop",
        status=AlertStatus.RESOLVED,
        ends_at=at(80),
    )
    assert d.ingest([gone]).of(gone.fingerprint) is Disposition.RECORDED
    clock.advance(400)  # back after the flap cooldown: a new failure, not the handed-over one
    back = alert(
        "ContainerCrashLooping",
        service="cart",
        namespace="online-shop",
        severity="critical",
        starts_at=at(480),
    )
    assert firing(d, back) == {"ContainerCrashLooping": Disposition.OPENED}


def test_after_a_resolved_close_a_source_restart_is_not_a_hand_over(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock)
    errors = alert("ServiceHighErrorRatio", service="checkout", namespace="online-shop")
    clock.advance(10)
    (first,) = d.ingest([errors]).opened
    clock.advance(60)
    close(store, first.id, clock)
    clock.advance(30)
    later = alert(
        "ServiceHighErrorRatio", service="checkout", namespace="online-shop", starts_at=at(95)
    )
    # Resolved means validated healthy; a start after the close is a failure after it.
    assert firing(d, later) == {"ServiceHighErrorRatio": Disposition.OPENED}


def test_closes_in_another_scope_do_not_hold_an_alert(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock)
    clock.advance(10)
    (hotel,) = d.ingest([alert("ServiceHighErrorRatio", service="search")]).opened
    clock.advance(60)
    close(store, hotel.id, clock)
    clock.advance(5)
    old_shop = alert("ServiceHighErrorRatio", service="cart", namespace="online-shop")
    assert firing(d, old_shop) == {"ServiceHighErrorRatio": Disposition.OPENED}


def _scanning(
    store: Store,
    meter: SeverityMeter,
    clock: LabClock,
    cluster: FakeCluster,
    metrics: FakeMetrics,
    namespace: str,
    services: list[str],
) -> tuple[Scanner, Detector]:
    cluster.workload_states[namespace] = [workload(s, namespace=namespace) for s in services]
    cluster.pod_states[namespace] = [
        pod(f"{s}-5d9c7f-a", namespace=namespace, app=s) for s in services
    ]
    scanner = Scanner(reader=cluster, metrics=metrics, clock=clock, namespaces=[namespace])
    return scanner, detector(store, meter, clock)


def test_a_window_that_still_holds_the_closed_incident_waits_for_it_to_pass(
    store: Store,
    meter: SeverityMeter,
    clock: LabClock,
    cluster: FakeCluster,
    metrics: FakeMetrics,
) -> None:
    """p99 over five minutes climbs past its SLO after the fix, from the slow requests of the
    failure itself: it waits until its window holds only time after the close, and by then it
    has cleared."""
    ns = "hotel-reservation"
    scanner, d = _scanning(store, meter, clock, cluster, metrics, ns, HOTEL_SERVICES)
    healthy = {s: signals(s) for s in HOTEL_SERVICES}
    metrics.signals[ns] = {**healthy, "search": signals("search", errors=0.4)}
    clock.advance(5)
    d.ingest(scanner.scan())
    clock.advance(30)
    d.ingest(scanner.scan())
    (first,) = store.incidents.list_open()
    clock.advance(60)
    close(store, first.id, clock)  # at 95 s
    closed_at = clock.now()
    metrics.signals[ns] = {**healthy, "frontend": signals("frontend", p99=1071.0)}
    seen = []
    for _ in range(50):  # 250 s after the close
        clock.advance(5)
        found = scanner.scan()
        seen += [d.ingest(found).of(a.fingerprint) for a in found if a.name.endswith("Latency")]
        d.tick()
    assert store.incidents.list_open() == []
    assert set(seen) == {Disposition.PENDING, Disposition.LAGGING}  # the scan's grace first
    assert seen[-1] is Disposition.LAGGING
    metrics.signals[ns] = healthy  # the window let go of the failure
    for _ in range(20):
        clock.advance(5)
        d.ingest(scanner.scan())
        d.tick()
    assert store.incidents.list_open() == []
    assert clock.now() > closed_at + timedelta(seconds=300)


def test_a_windowed_condition_still_firing_once_its_window_is_clear_opens(
    store: Store,
    meter: SeverityMeter,
    clock: LabClock,
    cluster: FakeCluster,
    metrics: FakeMetrics,
) -> None:
    ns = "online-shop"
    scanner, d = _scanning(store, meter, clock, cluster, metrics, ns, SHOP_SERVICES)
    healthy = {s: signals(s) for s in SHOP_SERVICES}
    clock.advance(10)
    (first,) = d.ingest([alert("ContainerCrashLooping", service="ad", namespace=ns)]).opened
    clock.advance(60)
    close(store, first.id, clock)  # at 70 s
    # A new failure right after the close: checkout fails a third of its requests.
    metrics.signals[ns] = {**healthy, "checkout": signals("checkout", errors=0.33)}
    opened_at = None
    for _ in range(80):
        clock.advance(5)
        opened = d.ingest(scanner.scan()).opened + d.tick().opened
        if opened and opened_at is None:
            opened_at = opened[0].opened_at
    assert opened_at == at(70 + 300)  # as soon as the window holds only time after the close
    (second,) = store.incidents.list_open()
    assert second.service == "checkout"
