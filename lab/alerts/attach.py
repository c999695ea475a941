"""Wiring the in-process alerts into a running lab.

    alerts = attach_alerts(world, webhook="http://127.0.0.1:8080/alerts/alertmanager")
    alerts.metrics.firing_alerts("hotel-reservation")   # a MetricsSource with alerts
    alerts.evaluator.firing()                           # LabAlert values, with state

Rules are evaluated after every history scrape of the simulator (in the thread that ticks it),
and the optional webhook notifier is updated right after.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from lab.alerts.evaluator import AlertEvaluator
from lab.alerts.rules import AlertRule, all_rules, lab_rules
from lab.alerts.webhook import HttpWebhook, Route, Send, WebhookNotifier
from lab.sim.source import SimMetrics

if TYPE_CHECKING:
    from lab.sim.world import LabWorld


@dataclass(frozen=True, slots=True, kw_only=True)
class LabAlerts:
    evaluator: AlertEvaluator
    metrics: SimMetrics  # the world's telemetry, with `firing_alerts` answered by the rules
    notifier: WebhookNotifier | None = None

    def evaluate(self, now: datetime) -> None:
        alerts = self.evaluator.evaluate(now)
        if self.notifier is not None:
            self.notifier.update(alerts, now)


def attach_alerts(
    world: LabWorld,
    *,
    webhook: str | Send | None = None,
    route: Route | None = None,
    rules: Iterable[AlertRule] | None = None,
    quiet_s: float = 0.0,
) -> LabAlerts:
    """Evaluate `rules` (default: the lab's rules for the world's apps) on every scrape, and
    notify `webhook` (a URL, or a callable taking the payload) like Alertmanager would.
    `quiet_s`: lab seconds from now before the first evaluation (see `AlertEvaluator`)."""
    chosen = (
        tuple(rules)
        if rules is not None
        else tuple(all_rules(lab_rules(b.model for b in world.bundles)))
    )
    # The rules read the store in the lab's own names whatever `world.config.signals` is: they
    # are the team's alert rules, written for its own metrics, and independent of the signal
    # profile through which Stratus reads the golden signals (`metrics` below).
    evaluator = AlertEvaluator(
        world.sim.store, chosen, not_before=world.clock.now() + timedelta(seconds=quiet_s)
    )
    notifier = None
    if webhook is not None:
        send = HttpWebhook(webhook) if isinstance(webhook, str) else webhook
        notifier = WebhookNotifier(send, route)
    alerts = LabAlerts(
        evaluator=evaluator,
        metrics=SimMetrics(
            world.sim.store,
            now=world.clock.now,
            alerts=evaluator.firing_alerts,
            signals=world.config.signals,
        ),
        notifier=notifier,
    )
    world.sim.on_scrape(alerts.evaluate)
    return alerts
