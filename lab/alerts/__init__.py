"""Alerting for the lab: the rules declared once (`rules`), the Prometheus rules file generated
from them (`promfile`, `python -m lab.alerts`), their in-process evaluation over the simulator's
telemetry (`evaluator`), and Alertmanager-style webhook notifications (`webhook`).

    from lab.alerts import attach_alerts
    alerts = attach_alerts(world, webhook="http://127.0.0.1:8080/alerts/alertmanager")
    alerts.metrics          # SimMetrics whose firing_alerts() come from the rules
"""

from lab.alerts.attach import LabAlerts, attach_alerts
from lab.alerts.evaluator import AlertEvaluator, AlertState, LabAlert
from lab.alerts.rules import AlertRule, RuleGroup, Severity, lab_rules
from lab.alerts.webhook import HttpWebhook, Route, WebhookError, WebhookNotifier

__all__ = [
    "AlertEvaluator",
    "AlertRule",
    "AlertState",
    "HttpWebhook",
    "LabAlert",
    "LabAlerts",
    "Route",
    "RuleGroup",
    "Severity",
    "WebhookError",
    "WebhookNotifier",
    "attach_alerts",
    "lab_rules",
]
