"""Alertmanager-style notifications: the v4 payload shape, grouping by namespace with
group_wait / group_interval / repeat_interval, resolutions, retries, and delivery over HTTP
from a running lab."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from agents.detection.alertmanager import parse_webhook
from agents.model import AlertStatus, JsonObject
from lab.alerts import AlertState, HttpWebhook, LabAlert, Route, WebhookError, WebhookNotifier
from lab.alerts.fingerprint import ZERO_TIME, _add, fingerprint, go_time
from lab.clock import LAB_EPOCH
from lab.faults import fault
from lab.sim.world import LabWorld, WorldConfig
from tests.lab.alerts.receiver import Receiver

T0 = LAB_EPOCH
ROUTE = Route(group_wait_s=30, group_interval_s=300, repeat_interval_s=3600)


def _alert(
    name: str,
    service: str,
    *,
    namespace: str = "hotel-reservation",
    state: str = AlertState.FIRING,
    at: datetime = T0,
    resolved_at: datetime | None = None,
) -> LabAlert:
    labels = {
        "alertname": name,
        "namespace": namespace,
        "service": service,
        "severity": "critical",
    }
    return LabAlert(
        rule=name,
        labels=labels,
        annotations={"summary": f"{service} fails", "description": "..."},
        state=state,
        active_at=at,
        fired_at=at,
        resolved_at=resolved_at,
        value=1.0,
        expr='up{job="x"} == 0',
        fingerprint=fingerprint(labels),
    )


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def sent() -> list[JsonObject]:
    return []


@pytest.fixture
def notifier(sent: list[JsonObject]) -> WebhookNotifier:
    return WebhookNotifier(sent.append, ROUTE)


def test_fingerprint_is_fnv1a_64_and_times_are_gos() -> None:
    assert fingerprint({}) == "cbf29ce484222325"  # the FNV-1a offset basis: empty input
    assert f"{_add(0xCBF29CE484222325, b'a'):016x}" == "af63dc4c8601ec8c"  # FNV-1a("a")
    assert fingerprint({"a": "b"}) != fingerprint({"b": "a"})
    assert go_time(None) == ZERO_TIME == "0001-01-01T00:00:00Z"
    assert go_time(T0) == "2026-01-05T09:00:00Z"
    assert go_time(T0 + timedelta(microseconds=120_000)) == "2026-01-05T09:00:00.12Z"


def test_payload_is_alertmanager_v4(notifier: WebhookNotifier, sent: list[JsonObject]) -> None:
    notifier.update([_alert("ServiceCallErrors", "geo")], _at(0))
    notifier.update([_alert("ServiceCallErrors", "geo")], _at(30))
    assert len(sent) == 1
    payload = sent[0]
    assert set(payload) == {
        "receiver",
        "status",
        "alerts",
        "groupLabels",
        "commonLabels",
        "commonAnnotations",
        "externalURL",
        "version",
        "groupKey",
        "truncatedAlerts",
    }
    assert payload["version"] == "4" and payload["status"] == "firing"
    assert payload["receiver"] == "stratus"
    assert payload["groupKey"] == '{}:{namespace="hotel-reservation"}'
    assert payload["groupLabels"] == {"namespace": "hotel-reservation"}
    assert payload["commonLabels"]["service"] == "geo"
    alert = payload["alerts"][0]
    assert set(alert) == {
        "status",
        "labels",
        "annotations",
        "startsAt",
        "endsAt",
        "generatorURL",
        "fingerprint",
    }
    assert alert["endsAt"] == ZERO_TIME and alert["startsAt"] == "2026-01-05T09:00:00Z"
    assert alert["generatorURL"].endswith("/graph?g0.expr=up%7Bjob%3D%22x%22%7D+%3D%3D+0&g0.tab=1")
    message = parse_webhook(payload)  # what Stratus's endpoint accepts
    assert message.alerts[0].fingerprint == fingerprint(alert["labels"])
    assert message.alerts[0].status is AlertStatus.FIRING


def test_group_wait_batches_and_group_interval_paces(
    notifier: WebhookNotifier, sent: list[JsonObject]
) -> None:
    a = _alert("ServiceCallErrors", "geo")
    b = _alert("ServiceHighErrorRatio", "search", at=_at(10))
    shop = _alert("ServiceCallErrors", "cart", namespace="online-shop", at=_at(20))
    notifier.update([a], _at(0))
    notifier.update([a, b], _at(10))
    notifier.update([a, b, shop], _at(20))
    assert sent == []  # group_wait
    notifier.update([a, b, shop], _at(30))
    assert len(sent) == 1 and len(sent[0]["alerts"]) == 2  # a and b together
    notifier.update([a, b, shop], _at(50))
    assert len(sent) == 2 and sent[1]["groupLabels"] == {"namespace": "online-shop"}
    c = _alert("PodNotReady", "geo", at=_at(60))
    notifier.update([a, b, c, shop], _at(60))
    notifier.update([a, b, c, shop], _at(329))
    assert len(sent) == 2  # a new alert waits for the group's next interval
    notifier.update([a, b, c, shop], _at(330))
    assert len(sent) == 3 and len(sent[2]["alerts"]) == 3
    # Nothing new: silence until repeat_interval (3600 s) after the last notification.
    for t in range(630, 3930, 300):
        notifier.update([a, b, c, shop], _at(t))
    assert len(sent) == 3
    notifier.update([a, b, c, shop], _at(3930))
    assert len(sent) == 5  # both groups repeat, each past its own last notification + 3600
    assert {p["groupLabels"]["namespace"] for p in sent[3:]} == {"hotel-reservation", "online-shop"}


def test_resolution_is_notified_then_the_group_is_gone(
    notifier: WebhookNotifier, sent: list[JsonObject]
) -> None:
    a = _alert("ServiceCallErrors", "geo")
    notifier.update([a], _at(0))
    notifier.update([a], _at(30))
    gone = _alert("ServiceCallErrors", "geo", state=AlertState.RESOLVED, resolved_at=_at(100))
    notifier.update([gone], _at(100))
    assert len(sent) == 1
    notifier.update([gone], _at(330))
    assert len(sent) == 2
    resolved = sent[1]
    assert resolved["status"] == "resolved"
    assert resolved["alerts"][0]["endsAt"] == go_time(_at(100))
    assert parse_webhook(resolved).alerts[0].status is AlertStatus.RESOLVED
    # The group is gone: a new alert waits group_wait again.
    again = _alert("ServiceCallErrors", "geo", at=_at(400))
    notifier.update([again], _at(400))
    notifier.update([again], _at(429))
    assert len(sent) == 2
    notifier.update([again], _at(430))
    assert len(sent) == 3


def test_a_failed_delivery_is_retried(sent: list[JsonObject]) -> None:
    attempts: list[int] = []

    def flaky(payload: dict[str, Any]) -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise WebhookError("receiver down")
        sent.append(payload)

    notifier = WebhookNotifier(flaky, ROUTE)
    a = _alert("ServiceCallErrors", "geo")
    notifier.update([a], _at(0))
    notifier.update([a], _at(30))
    assert sent == []
    notifier.update([a], _at(35))
    assert len(sent) == 1 and len(attempts) == 2


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


def test_http_delivery_and_a_server_error(receiver: Receiver) -> None:
    send = HttpWebhook(receiver.url)
    receiver.fail_with.append(500)
    with pytest.raises(WebhookError, match="answered 500"):
        send({"version": "4"})
    send({"version": "4"})
    assert receiver.received() == [{"version": "4"}]
    assert receiver.headers[0]["Content-Type"] == "application/json"
    with pytest.raises(ValueError, match="must be http"):
        HttpWebhook("file:///etc/passwd")


def test_a_lab_fault_reaches_the_webhook(receiver: Receiver) -> None:
    from lab.alerts import attach_alerts

    with LabWorld(WorldConfig(apps=("hotel-reservation",), seed=0)) as world:
        world.wait_healthy(timeout_s=120)
        route = Route(group_wait_s=5, group_interval_s=30)
        alerts = attach_alerts(world, webhook=receiver.url, route=route, quiet_s=60)
        world.advance(60)
        assert receiver.received() == []
        injection = fault("wrong-target-port").inject(world)
        world.advance(20)
        bodies = receiver.received()
        assert bodies, "no notification within 20 lab seconds"
        message = parse_webhook(bodies[0])
        names = {(a.name, a.service) for a in message.alerts}
        assert ("ServiceCallErrors", "geo") in names, names
        assert message.group_labels == {"namespace": "hotel-reservation"}
        fault(injection.fault_id).recover(world, injection)
        world.advance(120)
        last = parse_webhook(receiver.received()[-1])
        assert last.status is AlertStatus.RESOLVED
        assert alerts.notifier is not None and len(alerts.notifier.sent) == len(receiver.received())
