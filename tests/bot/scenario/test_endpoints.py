"""The HTTP endpoints of the running bot: the Alertmanager webhook (200 with what was decided,
400 with the payload's problem, 503 when storage is down), health, readiness and metrics."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from bot.ids import ActionId
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL, WEBHOOK_TOKEN, BotLab
from tests.support.faultproxy import SqliteLock


def alertmanager_payload(
    namespace: str, *, starts_at: datetime, fingerprint: str = "a1b2c3d4e5f60718"
) -> dict[str, Any]:
    """A v4 body as Alertmanager 0.25 sends it."""
    labels = {
        "alertname": "ServiceCallErrors",
        "namespace": namespace,
        "service": "geo",
        "severity": "critical",
    }
    return {
        "receiver": "stratus",
        "status": "firing",
        "alerts": [
            {
                "status": "firing",
                "labels": labels,
                "annotations": {"summary": f"calls to geo in {namespace} fail"},
                "startsAt": starts_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus.example:9090/graph?g0.expr=up",
                "fingerprint": fingerprint,
            }
        ],
        "groupLabels": {"namespace": namespace},
        "commonLabels": labels,
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.example:9093",
        "version": "4",
        "groupKey": f'{{}}:{{namespace="{namespace}"}}',
        "truncatedAlerts": 0,
    }


def started(lab: BotLab) -> datetime:
    """A minute ago in lab time (an alert from the future would wait for its start)."""
    return lab.world.clock.now() - timedelta(minutes=1)


def call(
    lab: BotLab,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    url: str | None = None,
    timeout: float = 10,
) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url or f"{lab.runtime.http_url}{path}",
        data=body,
        method=method,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def post_alerts(
    lab: BotLab,
    payload: Any,
    authorization: str | None = f"Bearer {WEBHOOK_TOKEN}",
    *,
    timeout: float = 10,
) -> tuple[int, dict[str, Any]]:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {"Authorization": authorization} if authorization is not None else {}
    status, body = call(lab, "POST", "", raw, headers, url=lab.runtime.webhook_url, timeout=timeout)
    return status, json.loads(body)


def test_webhook_health_readiness_and_metrics(make_lab: MakeLab) -> None:
    lab = make_lab()
    assert call(lab, "GET", "/healthz") == (200, b'{"status": "ok"}')
    status, body = call(lab, "GET", "/readyz")
    assert status == 200
    answer = json.loads(body)
    assert answer["ready"] is True and answer["checks"] == {"database": True, "slack": True}
    assert answer["leader"]["leading"] is True, answer

    status, answer = post_alerts(lab, b"{not json")
    assert status == 400 and answer["error"].startswith("$: not valid JSON")
    bad = alertmanager_payload(HOTEL, starts_at=started(lab))
    bad["alerts"][0]["startsAt"] = "yesterday"
    status, answer = post_alerts(lab, bad)
    assert status == 400 and answer["error"].startswith("alerts[0].startsAt:")
    assert lab.services.store.incidents.list_open() == []

    status, answer = post_alerts(lab, alertmanager_payload("not-covered", starts_at=started(lab)))
    assert status == 200 and answer["opened"] == []
    assert answer["dispositions"] == {"a1b2c3d4e5f60718": "ignored"}
    status, answer = post_alerts(lab, alertmanager_payload(HOTEL, starts_at=started(lab)))
    assert status == 200 and len(answer["opened"]) == 1, answer
    [opened] = answer["opened"]
    assert [r.id for r in lab.services.store.incidents.list_open()] == [opened]

    status, text = call(lab, "GET", "/metrics")
    assert status == 200
    metrics = text.decode()
    assert 'stratus_alertmanager_webhooks_total{status="400"} 2.0' in metrics
    assert 'stratus_alertmanager_webhooks_total{status="200"}' in metrics
    assert 'stratus_incidents_opened_total{source="alertmanager"} 1.0' in metrics
    assert "stratus_leader 1.0" in metrics  # the only replica leads
    for name in (
        "stratus_transactions_total",
        "stratus_undo_total",
        "stratus_approvals_total",
        "stratus_slack_api_errors_total",
        "stratus_llm_tokens_total",
        "stratus_incidents_closed_total",
        "stratus_incident_transitions_total",
    ):
        assert f"# TYPE {name} counter" in metrics


def test_storage_down_is_503_for_the_webhook_and_readiness(make_lab: MakeLab) -> None:
    """The database not taking writes (another connection holds `BEGIN EXCLUSIVE`, as a
    primary that lost its disk or a failover in progress). Holding a lock is deterministic;
    deleting the file was not: a connection opened just before the unlink kept writing to the
    deleted file, and the webhook answered 200."""
    lab = make_lab()
    database = lab.tmp / "stratus.db"
    assert database.exists()
    lock = SqliteLock(database)
    lock.hold()
    try:
        # A write waits out SQLite's busy timeout (15 s) before it gives up.
        payload = alertmanager_payload(HOTEL, starts_at=started(lab))
        status, answer = post_alerts(lab, payload, timeout=60)
        assert status == 503 and answer["error"].startswith("storage unavailable"), answer
        status, body = call(lab, "GET", "/readyz")
        answer = json.loads(body)
        assert status == 503 and answer["checks"]["database"] is False
        assert answer["reasons"]["database"].startswith("database write failed")
        assert call(lab, "GET", "/healthz")[0] == 200
    finally:
        lock.release()
    status, body = call(lab, "GET", "/readyz")  # the lock gone, ready again
    assert status == 200, body


def test_a_failing_click_is_answered_with_one_sentence(make_lab: MakeLab) -> None:
    """Bolt's global error handler (Reject looks the plan up in the listener) and the lanes'
    boundary (Approve decides in a lane) both end in one mapped sentence, never a trace."""
    lab = make_lab()
    ws = lab.ws
    buttons = [
        {
            "type": "button",
            "action_id": action,
            "value": "plan-doesnotexist:0000",
            "text": {"type": "plain_text", "text": action},
        }
        for action in (ActionId.APPROVE.value, ActionId.REJECT.value)
    ]
    posted = lab.services.slack.client.chat_postMessage(
        channel="incidents", text="a stale plan", blocks=[{"type": "actions", "elements": buttons}]
    )
    for action in (ActionId.APPROVE, ActionId.REJECT):
        assert ws.click("alice", "incidents", posted["ts"], action).acked
    expected = ":warning: That no longer exists (it may have been cleaned up)."
    lab.wait(
        "two answers",
        lambda: [m["text"] for m in ws.ephemerals("incidents", "alice")] == [expected] * 2,
    )
