"""The detector against real SQLite storage, a stepped lab clock and fake metrics."""

from __future__ import annotations

import re
import threading

from agents.detection import (
    AlertsUpdated,
    Detection,
    Detector,
    DetectorConfig,
    DetectorEvent,
    Disposition,
    IncidentOpened,
    incident_id,
)
from agents.model import AlertStatus, IncidentState, Scope
from agents.severity import SeverityMeter
from lab.clock import LabClock
from storage import Store
from tests.agents.detection.fakes import (
    FakeCluster,
    FakeMetrics,
    alert,
    at,
    signals,
    workload,
)

SERVICES = ["geo", "profile", "rate", "search", "frontend", "recommendation", "reservation"]


def detector(store: Store, meter: SeverityMeter, clock: LabClock, **config: object) -> Detector:
    return Detector(
        store=store,
        meter=meter,
        clock=clock,
        cluster="lab",
        config=DetectorConfig(**config),  # type: ignore[arg-type]
    )


def test_a_storm_of_500_alerts_in_10_s_is_one_incident_and_at_most_three_messages(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock)
    events: list[DetectorEvent] = []
    # One failure (geo crash-loops) fires alerts on geo and on every caller, per pod, over and
    # over: 50 webhooks of 10 alerts, 0.2 s apart, 70 distinct alerts in all.
    for batch in range(50):
        clock.advance(0.2)
        alerts = []
        for i in range(10):
            n = batch * 10 + i
            service = SERVICES[n % len(SERVICES)]
            pod_no = n % 10
            alerts.append(
                alert(
                    "HighErrorRate" if service != "geo" else "ContainerCrashLooping",
                    fingerprint=f"{service}-{pod_no}",
                    service=service,
                    severity="critical" if service == "geo" else "warning",
                    starts_at=at(0),
                    pod=f"{service}-{pod_no}",
                )
            )
        events += d.ingest(alerts).events
    assert clock.now() == at(10)
    clock.advance(55)
    events += d.tick().events  # at 65 s: the first coalesced update is due

    incidents = store.incidents.list_open()
    assert len(incidents) == 1
    assert len(events) <= 3
    assert isinstance(events[0], IncidentOpened)
    opened = events[0].incident
    assert opened.id == incidents[0].id
    assert opened.state is IncidentState.DETECTED
    assert opened.service == "geo"  # the critical alert leads
    updates = [e for e in events if isinstance(e, AlertsUpdated)]
    assert len(updates) == 1
    held = store.incidents.alerts(opened.id)
    assert len(held) == 70
    assert sum(a.count for a in held) == 500
    assert len(events[0].alerts) + len(updates[0].new) == 70
    kinds = [e.kind for e in store.incidents.timeline(opened.id)]
    assert kinds == ["transition", "alert"]

    # Later reports of the same alerts are no news: nothing more goes out.
    clock.advance(120)
    assert d.ingest([alert("HighErrorRate", fingerprint="rate-2", service="rate")]).events == ()
    assert d.tick().events == ()


def test_alerts_group_by_scope_and_later_ones_join(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock)
    first = d.ingest(
        [alert("HighErrorRate", service="frontend"), alert("PodDown", namespace="shop")]
    )
    assert sorted(i.scope.key for i in first.opened) == ["lab/hotel", "lab/shop"]
    clock.advance(5)
    later = d.ingest([alert("HighLatency", service="search")])
    assert later.opened == ()
    assert later.of("HighLatency-hotel-search") is Disposition.ATTACHED
    hotel = store.incidents.find_open_by_group_key("lab/hotel")
    assert hotel is not None
    assert {a.alertname for a in store.incidents.alerts(hotel.id)} == {
        "HighErrorRate",
        "HighLatency",
    }


def test_incident_is_persisted_detected_with_its_alerts_and_timeline(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock)
    result = d.ingest([alert("HighErrorRate", severity="critical")])
    (incident,) = result.opened
    assert re.fullmatch(r"INC-20260105-frontend-[0-9a-f]{4}", incident.id)
    row = store.incidents.get(incident.id)
    assert (row.state, row.group_key, row.namespace, row.service) == (
        "detected",
        "lab/hotel",
        "hotel",
        "frontend",
    )
    assert row.title == "frontend: HighErrorRate on frontend"
    (event,) = store.incidents.timeline(incident.id)
    assert (event.state, event.kind) == ("detected", "transition")
    assert event.data["alerts"] == ["HighErrorRate-hotel-frontend"]


def test_mu0_is_the_measured_severity(
    store: Store,
    meter: SeverityMeter,
    clock: LabClock,
    metrics: FakeMetrics,
    cluster: FakeCluster,
) -> None:
    metrics.signals["hotel"] = {"frontend": signals("frontend", errors=0.6)}
    cluster.workload_states["hotel"] = [workload("geo", replicas=2, available=0)]
    (incident,) = detector(store, meter, clock).ingest([alert()]).opened
    # error tiers: above SLO, > 25 %, > 50 % → 3 × 2.0; two lost replicas → 2 × 1.0
    assert incident.mu0 == 8.0


def test_mu0_falls_back_on_the_alert_weight_when_metrics_lag(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    result = detector(store, meter, clock).ingest(
        [alert("A", severity="critical"), alert("B", service="geo"), alert("B", service="geo")]
    )
    (incident,) = result.opened
    assert incident.mu0 == 4.0  # critical 3 + warning 1; a repeated alert counts once
    (event,) = store.incidents.timeline(incident.id)
    assert (event.data["measured_mu"], event.data["alert_weight"]) == (0.0, 4.0)


def test_mu0_falls_back_when_a_source_fails(
    store: Store, meter: SeverityMeter, clock: LabClock, metrics: FakeMetrics
) -> None:
    metrics.fail = True
    (incident,) = detector(store, meter, clock).ingest([alert(severity="critical")]).opened
    assert incident.mu0 == 3.0


def test_resolved_alerts_close_nothing_and_are_recorded(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock, update_interval_s=10)
    (incident,) = d.ingest([alert("A"), alert("B", service="geo")]).opened
    clock.advance(20)
    result = d.ingest([alert("A", status=AlertStatus.RESOLVED, ends_at=at(19))])
    assert result.of("A-hotel-frontend") is Disposition.UPDATED
    assert store.incidents.get(incident.id).state == "detected"
    (update,) = result.events
    assert isinstance(update, AlertsUpdated)
    assert ([a.name for a in update.new], [a.name for a in update.resolved]) == ([], ["A"])
    statuses = {a.alertname: a.status for a in store.incidents.alerts(incident.id)}
    assert statuses == {"A": "resolved", "B": "firing"}

    # A resolved alert that no open incident holds is only recorded (audit trail).
    orphan = d.ingest([alert("C", namespace="shop", status=AlertStatus.RESOLVED, ends_at=at(1))])
    assert orphan.of("C-shop-frontend") is Disposition.RECORDED
    assert orphan.opened == ()
    (record,) = store.audit.query(verb="alert")
    assert record.detail["disposition"] == "recorded"
    assert record.scope == "lab/shop"


def test_an_alert_that_flaps_does_not_open_a_new_incident(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock, cooldown_s=300)
    (first,) = d.ingest([alert("A")]).opened
    clock.advance(60)
    d.ingest([alert("A", status=AlertStatus.RESOLVED, ends_at=at(60))])
    store.incidents.close(first.id, at=clock.now(), message="resolved")

    clock.advance(60)  # re-fires 60 s after resolving: a flap
    refire = d.ingest([alert("A", starts_at=at(120))])
    assert refire.of("A-hotel-frontend") is Disposition.HELD
    assert store.incidents.list_open() == []
    clock.advance(100)
    assert d.tick().opened == ()
    assert [a.name for a in d.waiting()] == ["A"]

    # It resolves again while held: nothing ever opens.
    d.ingest([alert("A", status=AlertStatus.RESOLVED, ends_at=at(230))])
    clock.advance(600)
    assert d.tick().opened == ()
    assert store.incidents.list_open() == []
    assert d.waiting() == []


def test_a_held_alert_that_keeps_firing_opens_after_the_cooldown(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock, cooldown_s=300)
    d.ingest([alert("A", status=AlertStatus.RESOLVED, ends_at=at(0))])
    clock.advance(30)
    assert d.ingest([alert("A", starts_at=at(30))]).of("A-hotel-frontend") is Disposition.HELD
    clock.advance(299)
    assert d.tick().opened == ()
    clock.advance(2)
    (incident,) = d.tick().opened
    assert incident.opened_at == at(331)
    assert d.waiting() == []


def test_a_held_alert_may_join_an_open_incident(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock)
    d.ingest([alert("A", status=AlertStatus.RESOLVED, ends_at=at(0))])
    clock.advance(10)
    (incident,) = d.ingest([alert("B", service="geo", starts_at=at(10))]).opened
    joined = d.ingest([alert("A", starts_at=at(10))])
    assert joined.of("A-hotel-frontend") is Disposition.ATTACHED
    assert {a.alertname for a in store.incidents.alerts(incident.id)} == {"A", "B"}


def test_a_brief_alert_inside_its_grace_period_opens_nothing(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock, grace_s={"scan": 30.0})
    blip = alert("PodNotReady", source="scan", starts_at=at(0))
    clock.advance(5)
    assert d.ingest([blip]).of(blip.fingerprint) is Disposition.PENDING
    clock.advance(10)
    assert d.ingest([blip]).of(blip.fingerprint) is Disposition.PENDING
    clock.advance(5)
    resolved = alert("PodNotReady", source="scan", status=AlertStatus.RESOLVED, ends_at=at(20))
    assert d.ingest([resolved]).of(blip.fingerprint) is Disposition.RECORDED
    clock.advance(60)
    assert d.tick().opened == ()
    assert store.incidents.list_open() == []
    # Recorded once per change, not once per report.
    assert [r.detail["disposition"] for r in store.audit.query(verb="alert")] == [
        "pending",
        "recorded",
    ]


def test_a_pending_alert_still_firing_after_its_grace_opens_on_tick(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock, grace_s={"scan": 30.0})
    clock.advance(5)
    d.ingest([alert("PodNotReady", source="scan", starts_at=at(0))])
    clock.advance(24)
    assert d.tick().opened == ()
    clock.advance(1)
    (incident,) = d.tick().opened
    assert incident.source == "scan"
    # Webhook alerts have no grace by default (Prometheus applied `for:` already).
    assert d.ingest([alert("X", namespace="shop", starts_at=at(30))]).opened != ()


def test_unscoped_and_uncovered_alerts_are_recorded_only(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = Detector(store=store, meter=meter, clock=clock, cluster="lab", namespaces=["hotel"])
    result = d.ingest(
        [
            alert("NodeNotReady", namespace=None, service=None),
            alert("HighErrorRate", namespace="kube-system"),
            alert("HighErrorRate", fingerprint="other-cluster", cluster="prod-eu"),
        ]
    )
    assert [x.disposition for x in result.dispositions] == [
        Disposition.UNSCOPED,
        Disposition.IGNORED,
        Disposition.IGNORED,
    ]
    assert result.events == ()
    assert len(store.audit.query(verb="alert")) == 3


def test_updates_are_coalesced_per_interval_and_stop_when_the_incident_closes(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock, update_interval_s=60)
    (incident,) = d.ingest([alert("A")]).opened
    got: list[Detection] = []
    for i in range(30):  # a new alert every 4 s for 2 minutes
        clock.advance(4)
        got.append(d.ingest([alert(f"N{i}", service=f"s{i}")]))
    updates = [e for r in got for e in r.events if isinstance(e, AlertsUpdated)]
    assert [u.at for u in updates] == [at(60), at(120)]
    assert [len(u.new) for u in updates] == [15, 15]
    assert updates[0].text.startswith("15 new alerts (N0, N1, N10 +12)")

    clock.advance(4)
    d.ingest([alert("late", service="late")])
    store.incidents.close(incident.id, at=clock.now(), message="closed")
    clock.advance(120)
    assert d.tick().events == ()
    assert [e.kind for e in store.incidents.timeline(incident.id)] == [
        "transition",
        "alert",
        "alert",
        "transition",
    ]


def test_ids_are_readable_unique_and_survive_a_collision(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    scope = Scope(cluster="lab", namespace="hotel")
    a = alert("A", service="Geo_Service!")
    taken = incident_id(
        scope=scope, service=a.service, at=clock.now(), fingerprints=[a.fingerprint]
    )
    assert re.fullmatch(r"INC-20260105-geo-service-[0-9a-f]{4}", taken)
    d = detector(store, meter, clock)
    (first,) = d.ingest([a]).opened
    assert first.id == taken
    store.incidents.close(first.id, at=clock.now(), message="closed")
    # The same alert again at the same instant would get the same id: it gets a longer one.
    d2 = detector(store, meter, clock)
    (second,) = d2.ingest([a]).opened
    assert second.id != first.id
    assert re.fullmatch(r"INC-20260105-geo-service-[0-9a-f]{6}", second.id)


def test_concurrent_ingests_for_one_scope_open_one_incident(
    store: Store, meter: SeverityMeter, clock: LabClock
) -> None:
    d = detector(store, meter, clock)
    start = threading.Barrier(4)
    opened: list[int] = []

    def storm(worker: int) -> None:
        start.wait()
        for i in range(25):
            result = d.ingest([alert(f"A{worker}-{i}", service=f"s{worker}")])
            opened.append(len(result.opened))

    threads = [threading.Thread(target=storm, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sum(opened) == 1
    (incident,) = store.incidents.list_open()
    assert len(store.incidents.alerts(incident.id)) == 100
