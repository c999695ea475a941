"""End to end with the real binaries: a fault injected into the running lab makes the shipped
rules fire in Prometheus, and Alertmanager posts them to the webhook within 15 seconds. The
in-process evaluator of the same rules agrees on what fires."""

from __future__ import annotations

import time

from agents.detection.alertmanager import parse_webhook
from lab.alerts.fingerprint import ZERO_TIME, fingerprint
from lab.faults import fault
from tests.integration.conftest import APP, Stack, wait_until

DEADLINE_S = 15.0


def test_a_fault_reaches_the_webhook_through_prometheus_and_alertmanager(
    alerting_stack: Stack,
) -> None:
    stack = alerting_stack
    assert stack.receiver.received() == [], "alerts before any fault: " + str(
        stack.receiver.received()
    )
    injection = fault("crashing-image").inject(stack.world, app=APP)
    injected = time.monotonic()
    body = stack.receiver.wait_for(lambda b: b.get("status") == "firing", timeout_s=DEADLINE_S)
    elapsed = time.monotonic() - injected
    assert body is not None, f"no webhook within {DEADLINE_S:.0f}s\n{stack.tail()}"
    assert elapsed <= DEADLINE_S

    message = parse_webhook(body)
    assert body["version"] == "4" and message.receiver == "stratus"
    assert message.group_labels == {"namespace": APP}
    assert body["groupKey"] == '{}:{namespace="hotel-reservation"}'
    fired = {(a.name, a.service) for a in message.alerts}
    assert ("ContainerCrashLooping", "recommendation") in fired, fired
    for raw, alert in zip(body["alerts"], message.alerts, strict=True):
        assert {"namespace", "service", "severity", "alertname"} <= set(alert.labels)
        # Our fingerprint and time format are Alertmanager's own.
        assert raw["fingerprint"] == fingerprint(raw["labels"])
        assert raw["endsAt"] == ZERO_TIME
        assert "/graph?g0.expr=" in raw["generatorURL"]

    # The same rules in-process see the same alert (the lab evaluates once per lab second).
    wait_until(
        lambda: any(
            a.rule == "ContainerCrashLooping" and a.labels.get("service") == "recommendation"
            for a in stack.alerts.evaluator.firing(APP)
        ),
        timeout_s=10,
        what="the in-process evaluator to fire ContainerCrashLooping",
    )
    mine = next(a for a in stack.alerts.evaluator.firing(APP) if a.rule == "ContainerCrashLooping")
    theirs = next(a for a in message.alerts if a.name == "ContainerCrashLooping")
    assert mine.labels == {k: v for k, v in theirs.labels.items() if k not in ("job", "instance")}
    assert mine.annotations["summary"] == theirs.annotations["summary"]

    # Roll back: the crash-looping pod goes away and Alertmanager says it is resolved.
    fault(injection.fault_id).recover(stack.world, injection)
    resolved = stack.receiver.wait_for(
        lambda b: any(
            a["status"] == "resolved" and a["labels"]["alertname"] == "ContainerCrashLooping"
            for a in b["alerts"]
        ),
        timeout_s=45,
    )
    assert resolved is not None, f"no resolution notified\n{stack.tail()}"
