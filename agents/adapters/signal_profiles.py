"""Signal profiles: which PromQL reads the golden signals under one metric convention.

A cluster's request metrics come from whatever instruments it: a service mesh (Istio,
Linkerd), OpenTelemetry, the application's own library (Micrometer), the ingress controller,
or the lab's exporter. Each names metrics and labels differently, so one fixed set of queries
reads nothing on most clusters, and "nothing" must never read as "healthy" (DESIGN section 3,
rule 8). A `SignalProfile` says how one convention is read; a signal it cannot read is `None`
and the adapter refuses it (`MetricsError`) instead of reporting zeros.

Templates use two placeholders, `$namespace` and `$window` (a duration such as `60s`); any
other `$name` is an error, while `$1` (label_replace's group references) is left alone. Each
query yields one series per service, labelled by `service_label`; the call graph one series
per edge, labelled by `caller_label` and `peer_label`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agents.errors import MetricsError, SignalProfileError
from agents.policy import line_of

#: The golden signals a profile may read, in the order doctor lists them.
SIGNALS: tuple[str, ...] = ("request_rate", "error_rate", "latency_p50", "latency_p99")
CALL_GRAPH = "call_graph"
AUTO: Final = "auto"

_TEMPLATED: tuple[str, ...] = (*SIGNALS, CALL_GRAPH)
_PLACEHOLDER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_KNOWN_PLACEHOLDERS = frozenset({"namespace", "window"})


class LatencyUnit(StrEnum):
    SECONDS = "s"
    MILLISECONDS = "ms"

    @property
    def to_ms(self) -> float:
        return 1000.0 if self is LatencyUnit.SECONDS else 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalProfile:
    name: str
    #: Metric names that must all exist for `detect` to pick this profile.
    identify: tuple[str, ...]
    service_label: str
    request_rate: str | None = None
    error_rate: str | None = None
    latency_p50: str | None = None
    latency_p99: str | None = None
    latency_unit: LatencyUnit = LatencyUnit.SECONDS
    call_graph: str | None = None
    caller_label: str | None = None  # None: the service label
    peer_label: str | None = None

    def template(self, signal: str) -> str | None:
        """The query template of one of `SIGNALS` or `CALL_GRAPH`; None if it has none."""
        if signal not in _TEMPLATED:
            raise ValueError(f"unknown signal {signal!r}; use one of {', '.join(_TEMPLATED)}")
        value: str | None = getattr(self, signal)
        return value

    @property
    def missing(self) -> tuple[str, ...]:
        """The signals this profile cannot read (the call graph included)."""
        return tuple(s for s in (*SIGNALS, CALL_GRAPH) if self.template(s) is None)

    @property
    def call_graph_labels(self) -> tuple[str, str] | None:
        if self.call_graph is None or self.peer_label is None:
            return None
        return (self.caller_label or self.service_label, self.peer_label)


def unreadable(profile: SignalProfile, signal: str) -> MetricsError:
    """The error for a signal `profile` has no query for. Every metrics source raises it
    rather than answer: a signal nobody can read is unknown, never 0 (fail closed)."""
    return MetricsError(
        f"signal profile {profile.name} cannot read {signal}; set "
        "STRATUS_SIGNAL_PROFILE or write a profile file (STRATUS_SIGNAL_PROFILE_FILE)"
    )


def render(template: str, *, namespace: str, window_s: int) -> str:
    """The query with `$namespace` and `$window` filled in."""
    values = {"namespace": namespace, "window": f"{window_s}s"}
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _histogram(q: float, metric: str, by: str, matchers: str) -> str:
    return f"histogram_quantile({q}, sum by ({by}, le) (rate({metric}{{{matchers}}}[$window])))"


def _profile(
    name: str,
    *,
    identify: tuple[str, ...],
    service: str,
    requests: str,
    matchers: str,
    errors: str,
    histogram: str,
    unit: LatencyUnit = LatencyUnit.SECONDS,
    latency_matchers: str | None = None,
    call_graph: str | None = None,
    caller: str | None = None,
    peer: str | None = None,
) -> SignalProfile:
    """A profile whose rate queries are `sum by (service) (rate(requests{matchers}))`."""
    lm = latency_matchers if latency_matchers is not None else matchers
    return SignalProfile(
        name=name,
        identify=identify,
        service_label=service,
        request_rate=f"sum by ({service}) (rate({requests}{{{matchers}}}[$window]))",
        error_rate=f"sum by ({service}) (rate({requests}{{{matchers},{errors}}}[$window]))",
        latency_p50=_histogram(0.5, histogram, service, lm),
        latency_p99=_histogram(0.99, histogram, service, lm),
        latency_unit=unit,
        call_graph=call_graph,
        caller_label=caller,
        peer_label=peer,
    )


LAB = _profile(
    "lab",
    identify=("http_server_requests_total",),
    service="service",
    requests="http_server_requests_total",
    matchers='namespace="$namespace"',
    errors='code=~"5.."',
    histogram="http_server_request_duration_seconds_bucket",
    call_graph="sum by (service, peer) (increase(http_client_requests_total"
    '{namespace="$namespace"}[$window]))',
    peer="peer",
)

#: OpenTelemetry HTTP semantic conventions through the collector's Prometheus exporter, with
#: resource attributes turned into labels (`service.name` → `service_name`,
#: `k8s.namespace.name` → `k8s_namespace_name`). The service-graph connector's edges carry no
#: namespace by default, so its call graph is cluster-wide.
OTEL = _profile(
    "otel",
    identify=("http_server_request_duration_seconds_count",),
    service="service_name",
    requests="http_server_request_duration_seconds_count",
    matchers='k8s_namespace_name="$namespace"',
    errors='http_response_status_code=~"5.."',
    histogram="http_server_request_duration_seconds_bucket",
    call_graph="sum by (client, server) (increase(traces_service_graph_request_total[$window]))",
    caller="client",
    peer="server",
)

#: Istio's standard metrics: the server side is what the destination's proxy reports; the call
#: graph is the callers' proxies (`reporter="source"`). Durations are in milliseconds.
ISTIO = _profile(
    "istio",
    identify=("istio_requests_total",),
    service="destination_workload",
    requests="istio_requests_total",
    matchers='reporter="destination",destination_workload_namespace="$namespace"',
    errors='response_code=~"5.."',
    histogram="istio_request_duration_milliseconds_bucket",
    unit=LatencyUnit.MILLISECONDS,
    call_graph="sum by (source_workload, destination_workload) (increase(istio_requests_total"
    '{reporter="source",source_workload_namespace="$namespace"}[$window]))',
    caller="source_workload",
    peer="destination_workload",
)

#: The Linkerd proxy: `inbound` is what a workload served, `outbound` what it called; a
#: response is classified `failure` (5xx, or a gRPC error) by the proxy itself. Milliseconds.
LINKERD = _profile(
    "linkerd",
    identify=("response_total", "response_latency_ms_bucket"),
    service="deployment",
    requests="response_total",
    matchers='direction="inbound",namespace="$namespace"',
    errors='classification="failure"',
    histogram="response_latency_ms_bucket",
    unit=LatencyUnit.MILLISECONDS,
    call_graph="sum by (deployment, dst_deployment) (increase(response_total"
    '{direction="outbound",namespace="$namespace"}[$window]))',
    caller="deployment",
    peer="dst_deployment",
)

#: Spring Boot / Micrometer. Micrometer names no namespace or service itself: these are the
#: target labels a Kubernetes scrape (a ServiceMonitor) adds. Client calls are labelled by
#: `client_name`, the host called, which in a cluster is the callee's Service name.
MICROMETER = _profile(
    "micrometer",
    identify=("http_server_requests_seconds_count",),
    service="service",
    requests="http_server_requests_seconds_count",
    matchers='namespace="$namespace"',
    errors='status=~"5.."',
    histogram="http_server_requests_seconds_bucket",
    call_graph="sum by (service, client_name) (increase(http_client_requests_seconds_count"
    '{namespace="$namespace"}[$window]))',
    peer="client_name",
)

#: ingress-nginx sees only the traffic that enters through an Ingress, labelled by the backend
#: Service; scraped by a ServiceMonitor its `namespace`/`service` become `exported_*`. It says
#: nothing about calls between services: no call graph.
INGRESS_NGINX = _profile(
    "ingress-nginx",
    identify=("nginx_ingress_controller_requests",),
    service="exported_service",
    requests="nginx_ingress_controller_requests",
    matchers='exported_namespace="$namespace"',
    errors='status=~"5.."',
    histogram="nginx_ingress_controller_request_duration_seconds_bucket",
)

#: In `detect`'s order: the meshes first (they see every workload and the call graph), then
#: the lab (before OTel, which shares its histogram's name), then the rest.
BUILT_IN: tuple[SignalProfile, ...] = (ISTIO, LINKERD, LAB, OTEL, MICROMETER, INGRESS_NGINX)
PROFILES: dict[str, SignalProfile] = {p.name: p for p in BUILT_IN}
#: What `STRATUS_SIGNAL_PROFILE` accepts.
CHOICES: tuple[str, ...] = (AUTO, "lab", "otel", "istio", "linkerd", "micrometer", "ingress-nginx")


def detect(metric_names: Iterable[str]) -> SignalProfile | None:
    """The first built-in profile whose identifying metrics all exist, or None."""
    names = set(metric_names)
    return next((p for p in BUILT_IN if names.issuperset(p.identify)), None)


# --------------------------------------------------------------------------- profile files


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    identify: tuple[str, ...] = ()
    service_label: str = Field(min_length=1)
    request_rate: str | None = None
    error_rate: str | None = None
    latency_p50: str | None = None
    latency_p99: str | None = None
    latency_unit: LatencyUnit = LatencyUnit.SECONDS
    call_graph: str | None = None
    caller_label: str | None = None
    peer_label: str | None = None

    @field_validator("request_rate", "error_rate", "latency_p50", "latency_p99", "call_graph")
    @classmethod
    def _placeholders(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("is empty (leave the field out if the signal cannot be read)")
        unknown = sorted(set(_PLACEHOLDER.findall(value)) - _KNOWN_PLACEHOLDERS)
        if unknown:
            raise ValueError(f"unknown placeholder ${unknown[0]} (use $namespace and $window)")
        return value


def load_profile(path: Path) -> SignalProfile:
    """A custom profile from a YAML file whose keys are `SignalProfile`'s fields. Any problem
    raises `SignalProfileError` naming file, line, field and reason (as policy files do)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SignalProfileError(f"{path}: cannot read the signal profile: {e.strerror}") from e
    try:
        root = yaml.compose(text)
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(e, "problem", None) or str(e)
        raise SignalProfileError(f"{path}:{line}: (yaml): {problem}") from e
    if not isinstance(data, dict):
        raise SignalProfileError(f"{path}:1: (top level): expected a mapping of profile fields")
    try:
        parsed = _File.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = tuple(first["loc"])
        where = ".".join(str(p) for p in loc) or "(top level)"
        reason = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            known = ", ".join(f.name for f in fields(SignalProfile))
            reason = f"unknown field (known: {known})"
        raise SignalProfileError(f"{path}:{line_of(root, loc)}: {where}: {reason}") from e
    if parsed.call_graph is not None and parsed.peer_label is None:
        raise SignalProfileError(
            f"{path}:{line_of(root, ('call_graph',))}: peer_label: "
            "a call_graph query needs the label of the callee"
        )
    return SignalProfile(**parsed.model_dump())
