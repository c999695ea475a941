"""Alertmanager's webhook notifications, in-process: for the demo's bot without a real
Alertmanager.

Alerts are grouped by `group_by` labels (the namespace) into aggregation groups, and each group
notifies the way Alertmanager's dispatcher and notification log decide it:

* a new group waits `group_wait` before its first notification (so alerts that fire together
  arrive together);
* after that it is looked at every `group_interval`, and notifies when an alert started firing
  that the receiver has not been told about, or one it was told about resolved (with
  `send_resolved`), or `repeat_interval` passed since the last notification;
* resolved alerts leave the group once notified; an empty group is gone, and a new alert
  starts a new one (with `group_wait` again).

The payload is exactly Alertmanager 0.25's webhook body (version "4"): `groupKey`,
`truncatedAlerts`, `status`, `receiver`, `groupLabels`, `commonLabels`, `commonAnnotations`,
`externalURL`, and `alerts[]` with `status`, `labels`, `annotations`, `startsAt`, `endsAt`
(the zero time while firing), `generatorURL` and `fingerprint`.

Times are lab times, and groups are only looked at when `update` is called (after each rule
evaluation), so a timer is as precise as the evaluation cadence.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from agents.model import JsonObject
from lab.alerts.evaluator import AlertState, LabAlert
from lab.alerts.fingerprint import go_time

logger = logging.getLogger(__name__)

Send = Callable[[JsonObject], None]


class WebhookError(RuntimeError):
    """The receiver did not take the notification (connection failure or a non-2xx answer)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """The root route of an Alertmanager config, as far as the lab needs one."""

    receiver: str = "stratus"
    group_by: tuple[str, ...] = ("namespace",)
    group_wait_s: float = 30.0
    group_interval_s: float = 300.0
    repeat_interval_s: float = 4 * 3600.0
    send_resolved: bool = True
    external_url: str = "http://alertmanager.lab.invalid:9093"
    prometheus_url: str = "http://prometheus.lab.invalid:9090"  # generatorURL's base


@dataclass(slots=True)
class _Group:
    labels: dict[str, str]
    alerts: dict[str, LabAlert] = field(default_factory=dict)  # fingerprint → latest state
    next_flush: datetime | None = None
    sent_firing: frozenset[str] | None = None  # None: never notified
    sent_resolved: frozenset[str] = frozenset()
    sent_at: datetime | None = None


class HttpWebhook:
    """POSTs a payload as JSON, the way Alertmanager's webhook integration does."""

    def __init__(self, url: str, *, timeout_s: float = 5.0, token: str | None = None) -> None:
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"webhook URL must be http(s): {url!r}")
        self.url = url
        self.timeout_s = timeout_s
        self.token = token  # sent as `Authorization: Bearer`, like `http_config.authorization`

    def __call__(self, payload: JsonObject) -> None:
        request = urllib.request.Request(  # noqa: S310 - http(s) only, checked in __init__
            self.url,
            data=json.dumps(payload).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "User-Agent": "Alertmanager/0.25.0",
                **({"Authorization": f"Bearer {self.token}"} if self.token else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                response.read()
        except urllib.error.HTTPError as e:
            raise WebhookError(f"{self.url} answered {e.code}") from e
        except (urllib.error.URLError, OSError) as e:
            raise WebhookError(f"{self.url} unreachable: {e}") from e


class WebhookNotifier:
    def __init__(self, send: Send, route: Route | None = None) -> None:
        self.send = send
        self.route = route or Route()
        self._groups: dict[tuple[tuple[str, str], ...], _Group] = {}
        self.sent: list[JsonObject] = []  # every payload delivered, newest last

    def update(self, alerts: Sequence[LabAlert], now: datetime) -> list[JsonObject]:
        """Take the evaluator's alerts at lab time `now`; deliver what is due. Returns the
        payloads delivered by this call."""
        for alert in alerts:
            if alert.state == AlertState.PENDING:
                continue
            key = tuple(
                (name, alert.labels[name]) for name in self.route.group_by if name in alert.labels
            )
            group = self._groups.get(key)
            if group is None:
                if alert.state != AlertState.FIRING:
                    continue  # a resolution for a group that no longer exists
                group = self._groups[key] = _Group(labels=dict(key))
                group.next_flush = now + timedelta(seconds=self.route.group_wait_s)
            group.alerts[alert.fingerprint] = alert
        delivered = []
        for key in sorted(self._groups):
            group = self._groups[key]
            if group.next_flush is not None and now >= group.next_flush:
                payload = self._flush(group, now)
                if payload is not None:
                    delivered.append(payload)
            if not group.alerts:
                del self._groups[key]
        return delivered

    def _flush(self, group: _Group, now: datetime) -> JsonObject | None:
        firing = {fp for fp, a in group.alerts.items() if a.state != AlertState.RESOLVED}
        resolved = {fp for fp, a in group.alerts.items() if a.state == AlertState.RESOLVED}
        if not self._needs_update(group, firing, resolved, now):
            group.next_flush = now + timedelta(seconds=self.route.group_interval_s)
            group.alerts = {fp: a for fp, a in group.alerts.items() if fp in firing}
            return None
        shown = [
            a for a in group.alerts.values() if a.fingerprint in firing or self.route.send_resolved
        ]
        payload = self.payload(group.labels, shown)
        try:
            self.send(payload)
        except WebhookError as e:  # Alertmanager retries; so do we, at the next update
            logger.warning("alert notification for %s failed: %s", group.labels, e)
            return None
        self.sent.append(payload)
        group.sent_firing = frozenset(firing)
        group.sent_resolved = frozenset(resolved)
        group.sent_at = now
        group.next_flush = now + timedelta(seconds=self.route.group_interval_s)
        group.alerts = {fp: a for fp, a in group.alerts.items() if fp in firing}
        return payload

    def _needs_update(
        self, group: _Group, firing: set[str], resolved: set[str], now: datetime
    ) -> bool:
        """Alertmanager's DedupStage.needsUpdate."""
        if group.sent_firing is None:
            return bool(firing)
        if not firing <= group.sent_firing:
            return True
        if not firing:
            return bool(group.sent_firing)
        if self.route.send_resolved and not resolved <= group.sent_resolved:
            return True
        assert group.sent_at is not None
        return now - group.sent_at >= timedelta(seconds=self.route.repeat_interval_s)

    def payload(self, group_labels: Mapping[str, str], alerts: Sequence[LabAlert]) -> JsonObject:
        ordered = sorted(alerts, key=lambda a: sorted(a.labels.items()))
        bodies = [self._alert(a) for a in ordered]
        group_key = "{}:{" + ", ".join(f'{k}="{v}"' for k, v in sorted(group_labels.items())) + "}"
        return {
            "receiver": self.route.receiver,
            "status": "firing" if any(b["status"] == "firing" for b in bodies) else "resolved",
            "alerts": bodies,
            "groupLabels": dict(sorted(group_labels.items())),
            "commonLabels": _common([a.labels for a in ordered]),
            "commonAnnotations": _common([a.annotations for a in ordered]),
            "externalURL": self.route.external_url,
            "version": "4",
            "groupKey": group_key,
            "truncatedAlerts": 0,
        }

    def _alert(self, alert: LabAlert) -> JsonObject:
        resolved = alert.state == AlertState.RESOLVED
        query = urllib.parse.quote_plus(alert.expr)
        return {
            "status": "resolved" if resolved else "firing",
            "labels": dict(sorted(alert.labels.items())),
            "annotations": dict(sorted(alert.annotations.items())),
            "startsAt": go_time(alert.fired_at or alert.active_at),
            "endsAt": go_time(alert.resolved_at if resolved else None),
            "generatorURL": f"{self.route.prometheus_url}/graph?g0.expr={query}&g0.tab=1",
            "fingerprint": alert.fingerprint,
        }


def _common(maps: Sequence[Mapping[str, str]]) -> dict[str, str]:
    if not maps:
        return {}
    common = dict(maps[0])
    for other in maps[1:]:
        common = {k: v for k, v in common.items() if other.get(k) == v}
    return dict(sorted(common.items()))
