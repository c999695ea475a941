"""Severity fails closed (DESIGN section 3, rule 8): a source that does not answer makes the
measurement incomplete — μ is then a lower bound, named as such, and never healthy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from agents.errors import MetricsError, TransientError
from agents.model import Alert, AlertStatus, GoldenSignals, PodState, Scope, WorkloadState
from agents.severity import Severity, SeverityMeter

SCOPE = Scope(cluster="lab", namespace="shop")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def workload(name: str, *, replicas: int = 2, available: int = 2) -> WorkloadState:
    return WorkloadState(
        kind="Deployment",
        name=name,
        namespace=SCOPE.namespace,
        replicas=replicas,
        ready_replicas=available,
        available_replicas=available,
        updated_replicas=replicas,
        generation=1,
        observed_generation=1,
        selector={"app": name},
        images={name: f"{name}:1"},
    )


class Cluster:
    """The two reads severity makes, answering from fixed state or refusing like a dead API."""

    def __init__(self, workloads: Sequence[WorkloadState], *, down: bool = False) -> None:
        self._workloads = workloads
        self.down = down
        self.calls = 0

    def workloads(self, namespace: str) -> Sequence[WorkloadState]:
        self.calls += 1
        if self.down:
            raise TransientError("connection refused")
        return self._workloads

    def pods(self, namespace: str, *, label_selector: str = "") -> Sequence[PodState]:
        self.calls += 1
        if self.down:
            raise TransientError("connection refused")
        return ()


class Metrics:
    def __init__(
        self,
        *,
        alerts: Sequence[Alert] = (),
        signals: Mapping[str, GoldenSignals] | None = None,
        alerts_down: bool = False,
        signals_down: bool = False,
        edges: Sequence[tuple[str, str]] = (),
    ) -> None:
        self._alerts = alerts
        self._signals = signals or {}
        self._edges = edges
        self.alerts_down = alerts_down
        self.signals_down = signals_down

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Alert]:
        if self.alerts_down:
            raise MetricsError("alertmanager unreachable")
        return self._alerts

    def golden_signals(self, namespace: str, *, window_s: int = 60) -> Mapping[str, GoldenSignals]:
        if self.signals_down:
            raise MetricsError("prometheus unreachable")
        return self._signals

    def call_graph(self, namespace: str, *, window_s: int = 300) -> Sequence[tuple[str, str]]:
        if self.signals_down:
            raise MetricsError("prometheus unreachable")
        return self._edges


def meter(cluster: Cluster, metrics: Metrics | None) -> SeverityMeter:
    return SeverityMeter(reader=cluster, metrics=metrics)  # type: ignore[arg-type]


def test_a_complete_measurement_of_a_healthy_scope_is_healthy() -> None:
    severity = meter(Cluster([workload("cart")]), Metrics()).measure(SCOPE)
    assert severity.complete and severity.healthy and severity.mu == 0
    assert severity.unknown == () and not severity.partial
    assert severity.as_dict()["complete"] is True and severity.as_dict()["unknown"] == []


def test_a_cluster_that_does_not_answer_is_unknown_not_healthy() -> None:
    cluster = Cluster([workload("cart")], down=True)
    severity = meter(cluster, Metrics()).measure(SCOPE)
    assert severity.mu == 0  # nothing counted ...
    assert not severity.complete and not severity.healthy  # ... but nothing known either
    assert severity.unknown == ("cluster: workloads",)
    assert severity.partial  # the old name still says it
    assert cluster.calls == 1  # a dead API is not asked twice in one measurement
    assert severity.as_dict()["unknown"] == ["cluster: workloads"]
    assert severity.as_dict()["complete"] is False


def test_each_metrics_source_that_fails_is_named() -> None:
    both = meter(Cluster([]), Metrics(alerts_down=True, signals_down=True)).measure(SCOPE)
    assert both.unknown == ("metrics: alerts", "metrics: golden signals")
    assert not both.healthy
    signals = meter(Cluster([]), Metrics(signals_down=True)).measure(SCOPE)
    assert signals.unknown == ("metrics: golden signals",)


def test_alerts_still_count_when_only_the_golden_signals_fail() -> None:
    alert = Alert(
        fingerprint="f1",
        name="CartDown",
        status=AlertStatus.FIRING,
        labels={"severity": "critical", "service": "cart"},
        annotations={},
        starts_at=T0,
    )
    severity = meter(Cluster([]), Metrics(alerts=[alert], signals_down=True)).measure(SCOPE)
    assert severity.alerts == 3.0 and "cart" in severity.trouble
    assert severity.unknown == ("metrics: golden signals",)


def test_without_a_metrics_source_the_cluster_alone_is_a_complete_measurement() -> None:
    severity = meter(Cluster([workload("cart", replicas=2, available=1)]), None).measure(SCOPE)
    assert severity.complete and severity.mu == 1.0 and not severity.healthy


def test_firing_alerts_are_none_when_they_cannot_be_read() -> None:
    assert meter(Cluster([]), Metrics(alerts_down=True)).firing_alerts("shop") is None
    assert meter(Cluster([]), None).firing_alerts("shop") == ()


def test_an_old_style_severity_without_unknown_stays_complete() -> None:
    assert Severity(mu=0.0).healthy and Severity(mu=0.0).complete
    assert not Severity(mu=0.0, unknown=("metrics: alerts",)).healthy


SHOP_CALLS = (
    ("frontend-proxy", "frontend"),
    ("frontend", "checkout"),
    ("checkout", "cart"),
    ("cart", "valkey"),
    ("frontend", "ad"),
)


def test_the_callers_of_a_failing_service_are_every_service_its_failure_spreads_to() -> None:
    m = meter(Cluster([]), Metrics(edges=SHOP_CALLS))
    # Through checkout and frontend up to the proxy; not its callee (valkey), not a sibling (ad).
    assert m.callers_of("shop", frozenset({"cart"})) == {"checkout", "frontend", "frontend-proxy"}
    assert m.callers_of("shop", frozenset({"frontend-proxy"})) == frozenset()


def test_callers_are_unknown_when_the_call_graph_cannot_be_read() -> None:
    m = meter(Cluster([]), Metrics(edges=SHOP_CALLS, signals_down=True))
    assert m.callers_of("shop", frozenset({"cart"})) is None
