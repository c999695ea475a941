"""`PrometheusMetrics`: the `MetricsSource` port over a real Prometheus, through
prometheus-api-client.

Golden signals come from PromQL templates that a team can change to match its own metric
names (`PromQLTemplates`); the defaults match the lab's exporter and the common
`http_server_requests_total` / `..._duration_seconds_bucket` conventions. Firing alerts are
read from Prometheus's own `ALERTS` series, so they agree with what Alertmanager was sent.

Deadlines. Each request has a (connect, read) timeout and the session's urllib3 `Retry` is
bounded by `CallDeadline`: at most `attempts` tries, no backoff sleeps, no retries on HTTP
statuses (the library's default retries 5xx with backoff, which can block a validation far
past the writer lease). A timeout or an unreachable server is `MetricsError` saying so.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import requests
import urllib3
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException

from agents.deadlines import CallDeadline
from agents.errors import MetricsError, QueryError
from agents.model import Alert, AlertStatus, GoldenSignals, Series, SeriesPoint

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class PromQLTemplates:
    """`{namespace}` and `{window}` are substituted; each query must yield one series per
    service, labelled by `service_label`."""

    service_label: str = "service"
    request_rate: str = (
        'sum by (service) (rate(http_server_requests_total{{namespace="{namespace}"}}[{window}]))'
    )
    error_rate: str = (
        "sum by (service) (rate(http_server_requests_total"
        '{{namespace="{namespace}",code=~"5.."}}[{window}]))'
    )
    latency_p50_s: str = (
        "histogram_quantile(0.5, sum by (service, le) (rate("
        'http_server_request_duration_seconds_bucket{{namespace="{namespace}"}}[{window}])))'
    )
    latency_p99_s: str = (
        "histogram_quantile(0.99, sum by (service, le) (rate("
        'http_server_request_duration_seconds_bucket{{namespace="{namespace}"}}[{window}])))'
    )
    alerts: str = 'ALERTS{{alertstate="firing"{namespace_matcher}}}'
    #: Client-side request counters labelled by caller (`service`) and callee (`peer`).
    call_graph: str = (
        "sum by (service, peer) (increase(http_client_requests_total"
        '{{namespace="{namespace}"}}[{window}]))'
    )
    peer_label: str = "peer"


def _value(sample: Mapping[str, Any]) -> float:
    try:
        value = float(sample["value"][1])
    except (KeyError, IndexError, TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(value) or math.isinf(value) else value


class PrometheusMetrics:
    def __init__(
        self,
        url: str,
        *,
        templates: PromQLTemplates | None = None,
        deadline: CallDeadline | None = None,
    ) -> None:
        self._url = url.rstrip("/")
        self._templates = templates or PromQLTemplates()
        self.deadline = deadline or CallDeadline()
        retries = self.deadline.attempts - 1
        retry = urllib3.Retry(
            total=retries,
            connect=retries,
            read=retries,
            status=0,
            other=0,
            redirect=0,
            backoff_factor=0,
            respect_retry_after_header=False,
            raise_on_status=False,
        )
        self._client = PrometheusConnect(
            url=self._url,
            disable_ssl=True,
            retry=retry,
            # requests takes (connect, read); the library only passes it through.
            timeout=(self.deadline.connect_s, self.deadline.read_s),
        )

    def close(self) -> None:
        self._client._session.close()

    def _unreachable(self, error: requests.RequestException) -> MetricsError:
        d = self.deadline
        return MetricsError(
            f"Prometheus at {self._url} gave no answer within the deadline "
            f"({d.attempts} tries of {d.timeout_s:g}s): {error}"
        )

    def _query(self, promql: str) -> list[dict[str, Any]]:
        try:
            result = self._client.custom_query(promql)
        except PrometheusApiClientException as e:
            raise QueryError(promql, str(e)) from e
        except requests.RequestException as e:
            raise self._unreachable(e) from e
        return [r for r in result or [] if isinstance(r, dict)]

    def _by_service(self, template: str, namespace: str, window_s: int) -> dict[str, float]:
        promql = template.format(namespace=namespace, window=f"{window_s}s")
        label = self._templates.service_label
        return {
            str(r.get("metric", {}).get(label, "")): _value(r)
            for r in self._query(promql)
            if r.get("metric", {}).get(label)
        }

    def golden_signals(
        self, namespace: str, services: Sequence[str] | None = None, *, window_s: int = 60
    ) -> Mapping[str, GoldenSignals]:
        t = self._templates
        rate = self._by_service(t.request_rate, namespace, window_s)
        errors = self._by_service(t.error_rate, namespace, window_s)
        p50 = self._by_service(t.latency_p50_s, namespace, window_s)
        p99 = self._by_service(t.latency_p99_s, namespace, window_s)
        wanted = set(services) if services is not None else set(rate)
        return {
            name: GoldenSignals(
                service=name,
                request_rate=rate.get(name, 0.0),
                error_ratio=(errors.get(name, 0.0) / rate[name]) if rate.get(name) else 0.0,
                latency_p50_ms=p50.get(name, 0.0) * 1000,
                latency_p99_ms=p99.get(name, 0.0) * 1000,
            )
            for name in sorted(wanted)
        }

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Alert]:
        matcher = f',namespace="{namespace}"' if namespace else ""
        promql = self._templates.alerts.format(namespace_matcher=matcher)
        # ALERTS_FOR_STATE holds each alert's activeAt: when it started, which validation
        # needs ("no *new* alerts") and the ALERTS sample's own timestamp does not say.
        active_at = {
            _label_key(r.get("metric") or {}): _value(r)
            for r in self._query("ALERTS_FOR_STATE{" + matcher.lstrip(",") + "}")
        }
        alerts = []
        for r in self._query(promql):
            labels = {str(k): str(v) for k, v in (r.get("metric") or {}).items()}
            labels.pop("__name__", None)
            labels.pop("alertstate", None)
            name = labels.get("alertname", "unknown")
            started = active_at.get(_label_key(labels)) or float(r["value"][0])
            alerts.append(
                Alert(
                    fingerprint=_label_key(labels),
                    name=name,
                    status=AlertStatus.FIRING,
                    labels=labels,
                    annotations={},
                    starts_at=datetime.fromtimestamp(started, UTC),
                    source="prometheus",
                )
            )
        return alerts

    def series(
        self, namespace: str, service: str, signal: str, *, start: datetime, end: datetime
    ) -> Sequence[Series]:
        t = self._templates
        templates = {
            "request_rate": t.request_rate,
            "error_ratio": f"({t.error_rate}) / ({t.request_rate})",
            "latency_p99_ms": f"1000 * ({t.latency_p99_s})",
        }
        if signal not in templates:
            raise QueryError(signal, f"unknown signal; use one of {', '.join(templates)}")
        promql = templates[signal].format(namespace=namespace, window="60s")
        step = max(1, int((end - start).total_seconds() // 200))
        try:
            result = self._client.custom_query_range(
                promql, start_time=start, end_time=end, step=f"{step}s"
            )
        except PrometheusApiClientException as e:
            raise QueryError(promql, str(e)) from e
        except requests.RequestException as e:
            raise self._unreachable(e) from e
        label = t.service_label
        out = []
        for r in result or []:
            labels = {str(k): str(v) for k, v in (r.get("metric") or {}).items()}
            if labels.get(label, service) != service:
                continue
            points = tuple(
                SeriesPoint(at=datetime.fromtimestamp(float(ts), UTC), value=_safe(v))
                for ts, v in r.get("values") or []
            )
            out.append(Series(name=signal, labels=labels, points=points))
        return out

    def call_graph(self, namespace: str, *, window_s: int = 300) -> Sequence[tuple[str, str]]:
        t = self._templates
        promql = t.call_graph.format(namespace=namespace, window=f"{window_s}s")
        edges = set()
        for r in self._query(promql):
            labels = r.get("metric") or {}
            caller, callee = labels.get(t.service_label), labels.get(t.peer_label)
            if caller and callee and _value(r) > 0:
                edges.add((str(caller), str(callee)))
        return sorted(edges)

    def query(self, promql: str) -> Sequence[Series]:
        now = datetime.now(UTC)
        return [
            Series(
                name=str((r.get("metric") or {}).get("__name__", promql)),
                labels={str(k): str(v) for k, v in (r.get("metric") or {}).items()},
                points=(SeriesPoint(at=now, value=_value(r)),),
            )
            for r in self._query(promql)
        ]


def _label_key(labels: Mapping[str, Any]) -> str:
    return ",".join(
        f"{k}={v}" for k, v in sorted(labels.items()) if k not in ("__name__", "alertstate")
    )


def _safe(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(number) or math.isinf(number) else number
