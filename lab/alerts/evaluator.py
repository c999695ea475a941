"""In-process evaluation of the lab's alert rules over the simulator's telemetry.

Each evaluation (after every history scrape, in lab time) runs every rule's expression over the
`MetricStore`, the way Prometheus's rule manager does: a series that appears makes an alert
*pending*; once it has been active for the rule's `for:` it *fires* (its `startsAt` is that
moment); when it disappears the alert is *resolved* and kept for `RESOLVED_RETENTION_S` so a
notifier can report the resolution. Alert labels are the series' labels without `__name__`,
plus `alertname` and `severity`; annotations are the rule's templates rendered with them.

`firing_alerts(namespace)` is the `firing_alerts` part of the agents' `MetricsSource` port:
pass it as `SimMetrics(store, now=..., alerts=evaluator.firing_alerts)`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from agents.errors import QueryError
from agents.model import Alert, AlertStatus
from lab.alerts.fingerprint import fingerprint
from lab.alerts.rules import AlertRule, Combine, SetOp
from lab.alerts.templates import check_template, render
from lab.sim.metrics import MetricStore
from lab.sim.promql import Evaluator, Vector

logger = logging.getLogger(__name__)

RESOLVED_RETENTION_S = 15 * 60.0  # Prometheus keeps resolved alerts this long, resending them

Labels = dict[str, str]


class AlertState:
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"


@dataclass(frozen=True, slots=True, kw_only=True)
class LabAlert:
    """One alert instance of one rule, as Prometheus's rule manager holds it."""

    rule: str
    labels: dict[str, str]
    annotations: dict[str, str]
    state: str
    active_at: datetime  # when the expression first returned this series
    value: float
    expr: str  # the rule's PromQL, for the generator URL
    fired_at: datetime | None = None
    resolved_at: datetime | None = None
    fingerprint: str = field(default="")

    def to_alert(self) -> Alert:
        return Alert(
            fingerprint=self.fingerprint,
            name=self.rule,
            status=AlertStatus.RESOLVED
            if self.state == AlertState.RESOLVED
            else AlertStatus.FIRING,
            labels=dict(self.labels),
            annotations=dict(self.annotations),
            starts_at=self.fired_at or self.active_at,
            ends_at=self.resolved_at,
            source="prometheus",
        )


def evaluate_expr(rule: AlertRule, evaluator: Evaluator, at: float) -> list[tuple[Labels, float]]:
    """The rule's result vector at `at`: labels without `__name__`, and values."""
    expr = rule.expr
    if isinstance(expr, Combine):
        samples = _combine(
            expr, _vector(evaluator, expr.left, at), _vector(evaluator, expr.right, at)
        )
    else:
        samples = _vector(evaluator, expr, at)
    if rule.service_from is not None:
        samples = [
            (_label_replace(lbls, rule.service_from.label, rule.service_from.regex), v)
            for lbls, v in samples
        ]
    return [({k: v for k, v in lbls.items() if k != "__name__"}, value) for lbls, value in samples]


def _vector(evaluator: Evaluator, query: str, at: float) -> list[tuple[Labels, float]]:
    value = evaluator.evaluate(query, at)
    if not isinstance(value, Vector):
        raise QueryError(query, "an alert expression must return an instant vector")
    return [(dict(lbls), v) for lbls, v in value.samples]


def _combine(
    expr: Combine, left: list[tuple[Labels, float]], right: list[tuple[Labels, float]]
) -> list[tuple[Labels, float]]:
    keys = {tuple(lbls.get(k, "") for k in expr.on) for lbls, _ in right}
    keep = expr.op is SetOp.AND
    return [
        (lbls, v) for lbls, v in left if (tuple(lbls.get(k, "") for k in expr.on) in keys) == keep
    ]


def _label_replace(lbls: Labels, source: str, regex: str) -> Labels:
    """`label_replace(v, "service", "$1", source, regex)`: anchored; no match, no change."""
    match = re.fullmatch(regex, lbls.get(source, ""))
    if match is None:
        return lbls
    value = match.group(1) or ""
    out = dict(lbls)
    if value:
        out["service"] = value
    else:
        out.pop("service", None)
    return out


class AlertEvaluator:
    def __init__(
        self,
        store: MetricStore,
        rules: Iterable[AlertRule],
        *,
        not_before: datetime | None = None,
    ) -> None:
        """`not_before`: evaluations before this lab time do nothing — a lab booting shows
        errors (callers up before their dependencies), and they stay in the rules' 1m rate
        windows for a minute after the lab is healthy."""
        self._store = store
        self.not_before = not_before
        self._evaluator = Evaluator(store)
        self.rules = tuple(rules)
        for rule in self.rules:
            check_template(rule.summary)
            check_template(rule.description)
        self._lock = threading.Lock()
        self._alerts: dict[tuple[str, str], LabAlert] = {}  # (rule, fingerprint) → alert
        self.last_evaluation: datetime | None = None

    def evaluate(self, now: datetime) -> list[LabAlert]:
        """One evaluation round at lab time `now`; returns every alert held afterwards."""
        if self.not_before is not None and now < self.not_before:
            return []
        at = now.timestamp()
        seen: set[tuple[str, str]] = set()
        updated: dict[tuple[str, str], LabAlert] = {}
        for rule in self.rules:
            try:
                samples = evaluate_expr(rule, self._evaluator, at)
            except QueryError:  # a rule the subset cannot run is a bug: log it, keep the rest
                logger.exception("alert rule %s failed", rule.name)
                continue
            promql = rule.promql()
            for series, value in samples:
                labels = {**series, **rule.static_labels(), "alertname": rule.name}
                key = (rule.name, fingerprint(labels))
                seen.add(key)
                with self._lock:
                    old = self._alerts.get(key)
                if old is None or old.state == AlertState.RESOLVED:
                    old = LabAlert(
                        rule=rule.name,
                        labels=labels,
                        annotations={},
                        state=AlertState.PENDING,
                        active_at=now,
                        value=value,
                        expr=promql,
                        fingerprint=key[1],
                    )
                state, fired = old.state, old.fired_at
                if state == AlertState.PENDING and now - old.active_at >= timedelta(
                    seconds=rule.for_s
                ):
                    state, fired = AlertState.FIRING, now
                updated[key] = replace(
                    old,
                    state=state,
                    fired_at=fired,
                    value=value,
                    annotations={
                        "summary": render(rule.summary, labels, value),
                        "description": render(rule.description, labels, value),
                    },
                )
        with self._lock:
            for key, alert in self._alerts.items():
                if key in seen:
                    continue
                if alert.state == AlertState.FIRING:
                    updated[key] = replace(alert, state=AlertState.RESOLVED, resolved_at=now)
                elif (
                    alert.state == AlertState.RESOLVED
                    and alert.resolved_at is not None
                    and (now - alert.resolved_at).total_seconds() < RESOLVED_RETENTION_S
                ):
                    updated[key] = alert
                # a pending alert that went away is simply forgotten, as in Prometheus
            self._alerts = updated
            self.last_evaluation = now
            return list(updated.values())

    def alerts(self) -> list[LabAlert]:
        with self._lock:
            return list(self._alerts.values())

    def firing(self, namespace: str | None = None) -> list[LabAlert]:
        return sorted(
            (
                a
                for a in self.alerts()
                if a.state == AlertState.FIRING
                and (namespace is None or a.labels.get("namespace") == namespace)
            ),
            key=lambda a: (a.rule, sorted(a.labels.items())),
        )

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Alert]:
        """`MetricsSource.firing_alerts`: the alerts firing now, as `Alert` values."""
        return [a.to_alert() for a in self.firing(namespace)]
