"""The in-process evaluation of the shipped rules: silent on a healthy lab, the right alert
(name and `service`) for each kind of fault, `for:` in lab time, resolution, and the
`firing_alerts` part of the agents' MetricsSource."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from agents.model import AlertStatus
from lab.alerts import AlertState, LabAlerts, attach_alerts
from lab.faults import fault
from lab.sim.world import LabWorld, WorldConfig

HOTEL = "hotel-reservation"
SHOP = "online-shop"


@pytest.fixture
def worlds() -> Iterator[list[LabWorld]]:
    made: list[LabWorld] = []
    yield made
    for world in made:
        world.stop()


def _lab(worlds: list[LabWorld], *apps: str) -> tuple[LabWorld, LabAlerts]:
    world = LabWorld(WorldConfig(apps=apps, seed=0)).start()
    worlds.append(world)
    world.wait_healthy(timeout_s=120)
    # The shop's boot errors stay in the 1m rate windows for a minute: stay quiet till then.
    alerts = attach_alerts(world, quiet_s=60)
    world.advance(60)
    return world, alerts


def _fired(world: LabWorld, alerts: LabAlerts, within_s: int) -> dict[tuple[str, str], int]:
    """(alertname, service) → lab seconds after which it was first seen firing."""
    seen: dict[tuple[str, str], int] = {}
    for waited in range(5, within_s + 1, 5):
        world.advance(5)
        for alert in alerts.evaluator.firing():
            seen.setdefault((alert.rule, alert.labels.get("service", "")), waited)
    return seen


def test_a_healthy_lab_fires_nothing(worlds: list[LabWorld]) -> None:
    world, alerts = _lab(worlds, HOTEL, SHOP)
    for _ in range(12):
        world.advance(15)
        assert alerts.evaluator.alerts() == []
    assert alerts.metrics.firing_alerts() == []


@pytest.mark.parametrize(
    ("fault_id", "app", "expected"),
    [
        (
            "wrong-target-port",
            HOTEL,
            {("ServiceCallErrors", "geo"), ("ServiceHighErrorRatio", "search")},
        ),
        ("crashing-image", HOTEL, {("ContainerCrashLooping", "recommendation")}),
        ("image-not-found", HOTEL, {("ContainerImagePullFailing", "user")}),
        ("node-selector-mismatch", HOTEL, {("PodUnschedulable", "reservation")}),
        ("cpu-limit-too-low", HOTEL, {("ServiceHighLatency", "geo")}),
        (
            "memory-limit-too-low",
            SHOP,
            {("ContainerOOMKilled", "cart"), ("ContainerCrashLooping", "cart")},
        ),
        (
            "wrong-binary",
            SHOP,
            {("ContainerCrashLooping", "currency"), ("PodNotReady", "currency")},
        ),
        (
            "pod-failure",
            HOTEL,
            {("WorkloadReplicasUnavailable", "geo"), ("ServiceCallErrors", "geo")},
        ),
    ],
)
def test_each_fault_fires_its_alert_with_the_service(
    worlds: list[LabWorld], fault_id: str, app: str, expected: set[tuple[str, str]]
) -> None:
    world, alerts = _lab(worlds, app)
    fault(fault_id).inject(world, app=app)
    fired = _fired(world, alerts, within_s=40)
    assert expected <= set(fired), fired
    for alert in alerts.evaluator.firing():
        assert alert.labels["namespace"] == app
        assert alert.labels["service"] in world.bundles[0].model.services or alert.rule.startswith(
            "ServiceCall"
        )
        assert alert.labels["severity"] in ("critical", "warning")
        assert alert.annotations["summary"] and "{{" not in alert.annotations["description"]


def test_for_durations_are_lab_time_and_alerts_resolve(worlds: list[LabWorld]) -> None:
    world, alerts = _lab(worlds, HOTEL)
    injection = fault("node-selector-mismatch").inject(world, app=HOTEL)  # for: 15s
    seen_pending = None
    for _ in range(10):
        world.advance(5)
        found = [a for a in alerts.evaluator.alerts() if a.rule == "PodUnschedulable"]
        if found and found[0].state == AlertState.PENDING:
            seen_pending = found[0]
        if found and found[0].state == AlertState.FIRING:
            firing = found[0]
            break
    else:
        pytest.fail("PodUnschedulable never fired")
    assert seen_pending is not None
    assert firing.fired_at is not None
    assert firing.fired_at - firing.active_at >= timedelta(seconds=15)
    assert firing.annotations["summary"].endswith("cannot be scheduled")

    # The source the agents read: Alert values, filtered by namespace.
    exposed = alerts.metrics.firing_alerts(HOTEL)
    mine = [a for a in exposed if a.name == "PodUnschedulable"]
    assert len(mine) == 1 and mine[0].status is AlertStatus.FIRING
    assert mine[0].service == "reservation" and mine[0].starts_at == firing.fired_at
    assert mine[0].fingerprint == firing.fingerprint and mine[0].source == "prometheus"
    assert alerts.metrics.firing_alerts(SHOP) == []

    fault(injection.fault_id).recover(world, injection)
    world.advance(30)
    resolved = [a for a in alerts.evaluator.alerts() if a.rule == "PodUnschedulable"]
    assert resolved and resolved[0].state == AlertState.RESOLVED
    assert resolved[0].resolved_at is not None and resolved[0].to_alert().ends_at is not None
    assert not any(a.name == "PodUnschedulable" for a in alerts.metrics.firing_alerts(HOTEL))


def test_quiet_period_evaluates_nothing(worlds: list[LabWorld]) -> None:
    world = LabWorld(WorldConfig(apps=(HOTEL,), seed=0)).start()
    worlds.append(world)
    world.wait_healthy(timeout_s=120)
    alerts = attach_alerts(world, quiet_s=120)
    fault("crashing-image").inject(world, app=HOTEL)
    world.advance(60)
    assert alerts.evaluator.last_evaluation is None and alerts.evaluator.alerts() == []
    world.advance(70)
    assert any(a.rule == "ContainerCrashLooping" for a in alerts.evaluator.firing())
