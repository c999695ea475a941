"""The lab's alert rules, declared once.

From these declarations `lab.alerts.promfile` writes the Prometheus rules file that ships in
`manifests/prometheus/` (a test keeps the committed file equal to the generated one), and
`lab.alerts.evaluator` evaluates the very same expressions in-process over the simulator's
telemetry, for runs without Prometheus (the demo, the bench, tests).

An expression is PromQL in the subset `lab.sim.promql` evaluates, optionally combined by the
two constructs that subset lacks, kept typed here so both renderings agree: a set operation
(`and on (...)`, `unless on (...)`) and `label_replace` deriving the `service` label from a pod
or deployment name. Every rule's alerts carry `namespace`, `service` and `severity`.

The SLO rules are per app, with the app model's own thresholds; the Kubernetes rules watch
kube-state-metrics series in every namespace. `for:` durations are short on purpose: the
lab's faults are sharp and the demo runs in real time. A production cluster would use minutes.

A ResourceQuota refusing pods (FailedCreate) has no rule: kube-state-metrics has no series for
a refused create, and the running pods keep the replica gauges whole. Stratus's periodic scan
reads the events and covers it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from lab.sim.model import AppModel

#: A Deployment pod's name is `<deployment>-<pod-template-hash>-<5 chars>`, a StatefulSet
#: pod's `<statefulset>-<ordinal>`. RE2 and Python read this the same way.
POD_OWNER_REGEX = "(.+?)(?:-[a-z0-9]{5,10}-[a-z0-9]{5}|-[0-9]+)"
WHOLE_VALUE = "(.*)"


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"


class SetOp(StrEnum):
    AND = "and"
    UNLESS = "unless"


@dataclass(frozen=True, slots=True, kw_only=True)
class Combine:
    """`(left) <op> on (labels) (right)`: keep the left samples whose `on` labels do (and) or do
    not (unless) appear on the right."""

    left: str
    op: SetOp
    on: tuple[str, ...]
    right: str

    def promql(self) -> str:
        return f"({self.left}) {self.op} on ({', '.join(self.on)}) ({self.right})"


Expr = str | Combine


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceFrom:
    """Derive the `service` label from another label's value (`label_replace`)."""

    label: str
    regex: str = WHOLE_VALUE


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertRule:
    name: str
    expr: Expr
    for_s: int
    severity: Severity
    summary: str  # Prometheus template text: {{ $labels.x }}, {{ $value | humanize... }}
    description: str
    service_from: ServiceFrom | None = None  # None: the expression yields `service` itself
    #: Static labels besides `severity` (an SLO rule names its app: the same alert name in
    #: two groups must differ by a label, or promtool reports duplicate rules).
    labels: tuple[tuple[str, str], ...] = ()

    def static_labels(self) -> dict[str, str]:
        return {**dict(self.labels), "severity": str(self.severity)}

    def promql(self) -> str:
        base = self.expr if isinstance(self.expr, str) else self.expr.promql()
        if self.service_from is None:
            return base
        src = self.service_from
        return f'label_replace({base}, "service", "$1", "{src.label}", "{src.regex}")'


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleGroup:
    name: str
    rules: tuple[AlertRule, ...]


def _ratio(metric: str, by: str, matchers: str, threshold: float) -> str:
    return (
        f'sum by (namespace, {by}) (rate({metric}{{{matchers},code=~"5.."}}[1m])) '
        f"/ sum by (namespace, {by}) (rate({metric}{{{matchers}}}[1m])) > {threshold:g}"
    )


def slo_rules(model: AppModel) -> RuleGroup:
    """Error ratio and p99 latency above the app's SLO, as its services and callers see them."""
    ns = f'namespace="{model.namespace}"'
    slo = model.slo
    app = (("app", model.app),)
    return RuleGroup(
        name=f"stratus-lab-slo-{model.app}",
        rules=(
            AlertRule(
                name="ServiceHighErrorRatio",
                labels=app,
                expr=_ratio("http_server_requests_total", "service", ns, slo.error_ratio),
                for_s=5,
                severity=Severity.CRITICAL,
                summary="{{ $labels.service }} in {{ $labels.namespace }} fails requests",
                description=(
                    "{{ $value | humanizePercentage }} of the requests {{ $labels.service }} "
                    f"served over 1m failed (SLO {slo.error_ratio:.0%})."
                ),
            ),
            AlertRule(
                name="ServiceCallErrors",
                labels=app,
                expr=_ratio("http_client_requests_total", "peer", ns, slo.error_ratio),
                service_from=ServiceFrom(label="peer"),
                for_s=5,
                severity=Severity.CRITICAL,
                summary="calls to {{ $labels.service }} in {{ $labels.namespace }} fail",
                description=(
                    "{{ $value | humanizePercentage }} of the calls its callers made to "
                    f"{{{{ $labels.service }}}} over 1m failed (SLO {slo.error_ratio:.0%})."
                ),
            ),
            AlertRule(
                name="ServiceHighLatency",
                labels=app,
                expr=(
                    "histogram_quantile(0.99, sum by (namespace, service, le) "
                    f"(rate(http_server_request_duration_seconds_bucket{{{ns}}}[1m]))) "
                    f"> {slo.latency_p99_ms / 1000:g}"
                ),
                for_s=15,
                severity=Severity.WARNING,
                summary="{{ $labels.service }} in {{ $labels.namespace }} is slow",
                description=(
                    "p99 latency of {{ $labels.service }} is {{ $value | humanizeDuration }} "
                    f"over 1m (SLO {slo.latency_p99_ms:g} ms)."
                ),
            ),
        ),
    )


def _per_container(reason: str) -> str:
    return (
        "max by (namespace, pod, container) "
        f'(kube_pod_container_status_waiting_reason{{reason=~"{reason}"}}) > 0'
    )


def kubernetes_rules() -> RuleGroup:
    """Pod and workload conditions from kube-state-metrics, in every namespace."""
    pod = ServiceFrom(label="pod", regex=POD_OWNER_REGEX)
    return RuleGroup(
        name="stratus-lab-kubernetes",
        rules=(
            AlertRule(
                name="ContainerCrashLooping",
                expr=_per_container("CrashLoopBackOff"),
                service_from=pod,
                for_s=0,
                severity=Severity.WARNING,
                summary="{{ $labels.pod }} is crash-looping",
                description=(
                    "Container {{ $labels.container }} of {{ $labels.namespace }}/"
                    "{{ $labels.pod }} keeps exiting and is in CrashLoopBackOff."
                ),
            ),
            AlertRule(
                name="ContainerImagePullFailing",
                expr=_per_container("ErrImagePull|ImagePullBackOff|InvalidImageName"),
                service_from=pod,
                for_s=10,
                severity=Severity.WARNING,
                summary="{{ $labels.pod }} cannot pull its image",
                description=(
                    "Container {{ $labels.container }} of {{ $labels.namespace }}/"
                    "{{ $labels.pod }} is waiting on an image pull that fails."
                ),
            ),
            AlertRule(
                name="ContainerCreateFailing",
                expr=_per_container("CreateContainerConfigError|CreateContainerError"),
                service_from=pod,
                for_s=10,
                severity=Severity.WARNING,
                summary="{{ $labels.pod }} cannot create its container",
                description=(
                    "Container {{ $labels.container }} of {{ $labels.namespace }}/"
                    "{{ $labels.pod }} cannot be created (missing ConfigMap, Secret or key?)."
                ),
            ),
            AlertRule(
                name="ContainerOOMKilled",
                expr=Combine(
                    left=(
                        "max by (namespace, pod, container) "
                        "(kube_pod_container_status_last_terminated_reason"
                        '{reason="OOMKilled"}) > 0'
                    ),
                    op=SetOp.AND,
                    on=("namespace", "pod", "container"),
                    right="increase(kube_pod_container_status_restarts_total[10m]) > 0",
                ),
                service_from=pod,
                for_s=0,
                severity=Severity.WARNING,
                summary="{{ $labels.pod }} was OOMKilled",
                description=(
                    "Container {{ $labels.container }} of {{ $labels.namespace }}/"
                    "{{ $labels.pod }} was killed for exceeding its memory limit and restarted "
                    "within 10m."
                ),
            ),
            AlertRule(
                name="PodNotReady",
                expr=Combine(
                    left='max by (namespace, pod) (kube_pod_status_ready{condition="false"}) > 0',
                    op=SetOp.UNLESS,
                    on=("namespace", "pod"),
                    right=(
                        "max by (namespace, pod) "
                        '(kube_pod_status_phase{phase=~"Succeeded|Failed"}) > 0'
                    ),
                ),
                service_from=pod,
                for_s=30,
                severity=Severity.WARNING,
                summary="{{ $labels.pod }} is not ready",
                description="{{ $labels.namespace }}/{{ $labels.pod }} has not been ready for 30s.",
            ),
            AlertRule(
                name="PodUnschedulable",
                expr=Combine(
                    left='max by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) > 0',
                    op=SetOp.UNLESS,
                    on=("namespace", "pod"),
                    right="max by (namespace, pod) (kube_pod_container_status_waiting_reason)",
                ),
                service_from=pod,
                for_s=15,
                severity=Severity.WARNING,
                summary="{{ $labels.pod }} cannot be scheduled",
                description=(
                    "{{ $labels.namespace }}/{{ $labels.pod }} is Pending with no container "
                    "created: no node fits it (nodeSelector, affinity, taints or resources)."
                ),
            ),
            AlertRule(
                name="WorkloadReplicasUnavailable",
                expr=(
                    "max by (namespace, deployment) "
                    "(kube_deployment_status_replicas_unavailable) > 0"
                ),
                service_from=ServiceFrom(label="deployment"),
                for_s=30,
                severity=Severity.WARNING,
                summary="{{ $labels.deployment }} has unavailable replicas",
                description=(
                    "Deployment {{ $labels.namespace }}/{{ $labels.deployment }} has "
                    "{{ $value }} replica(s) unavailable for 30s."
                ),
            ),
        ),
    )


def lab_rules(models: Iterable[AppModel]) -> tuple[RuleGroup, ...]:
    """Every group for these apps: one SLO group per app, then the Kubernetes group."""
    return (*(slo_rules(m) for m in models), kubernetes_rules())


def all_rules(groups: Iterable[RuleGroup]) -> list[AlertRule]:
    return [rule for group in groups for rule in group.rules]
