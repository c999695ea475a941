"""`PrometheusMetrics`: the `MetricsSource` port over a real Prometheus, through
prometheus-api-client.

Golden signals come from a `SignalProfile` (`agents.adapters.signal_profiles`): the PromQL of
one metric convention (the lab's exporter, OpenTelemetry, Istio, Linkerd, Micrometer,
ingress-nginx, or a team's own file). With `profile="auto"` the adapter asks Prometheus for its
metric names on first use and takes the first built-in profile they match; a profile given by
name or file is taken only if its identifying metrics exist there (queries that match nothing
would read every namespace as idle, and idle as healthy). While Prometheus is unreachable or
the names do not fit it asks again later (1 s, doubling up to `rediscover_s`), and every read
meanwhile raises `MetricsError`. A signal the profile cannot read raises `MetricsError` naming
the profile and the signal: unknown, never zero (DESIGN section 3, rule 8). Firing alerts are
read from Prometheus's own `ALERTS` series, so they agree with what Alertmanager was sent,
whatever the profile.

Deadlines. Each request has a (connect, read) timeout and the session's urllib3 `Retry` is
bounded by `CallDeadline`: at most `attempts` tries, no backoff sleeps, no retries on HTTP
statuses (the library's default retries 5xx with backoff, which can block a validation far
past the writer lease). A timeout or an unreachable server is `MetricsError` saying so.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException

from agents.adapters.retry import bounded_retry
from agents.adapters.signal_profiles import (
    AUTO,
    CALL_GRAPH,
    SIGNALS,
    SignalProfile,
    detect,
    render,
    unreadable,
)
from agents.deadlines import CallDeadline
from agents.errors import MetricsError, MetricsUnavailable, QueryError
from agents.model import Alert, AlertStatus, GoldenSignals, Series, SeriesPoint

logger = logging.getLogger(__name__)

_ALERTS = 'ALERTS{{alertstate="firing"{namespace_matcher}}}'
#: The series `series` charts, and the profile's signals each is computed from.
_CHARTED: dict[str, tuple[str, ...]] = {
    "request_rate": ("request_rate",),
    "error_ratio": ("error_rate", "request_rate"),
    "latency_p99_ms": ("latency_p99",),
}


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
        profile: SignalProfile | Literal["auto"] = AUTO,
        deadline: CallDeadline | None = None,
        rediscover_s: float = 30.0,
    ) -> None:
        self._url = url.rstrip("/")
        self._configured = profile
        self._profile: SignalProfile | None = None  # once checked against Prometheus
        # Discovery lists every metric name, which is large on a real Prometheus: after a
        # failed try, wait before the next (reads meanwhile raise the reason): 1 s, doubling
        # up to `rediscover_s`, since a Prometheus started with the bot has scraped nothing
        # for its first seconds and a fixed 30 s would leave μ unknown that long.
        self._rediscover_s = rediscover_s
        self._failed_discoveries = 0
        self._next_discovery = 0.0
        self._discovery_problem = ""
        self._discovery_unavailable = False
        self._discovery_lock = threading.Lock()
        self.deadline = deadline or CallDeadline()
        self._client = PrometheusConnect(
            url=self._url,
            disable_ssl=True,
            retry=bounded_retry(self.deadline),
            # requests takes (connect, read); the library only passes it through.
            timeout=(self.deadline.connect_s, self.deadline.read_s),
        )

    def close(self) -> None:
        self._client._session.close()

    @property
    def configured_profile(self) -> str:
        """`auto` or the name of the profile given."""
        return self._configured.name if isinstance(self._configured, SignalProfile) else AUTO

    def profile(self) -> SignalProfile:
        """The profile in use, checked against Prometheus's metric names on first use: under
        `auto` the first built-in they match; a given profile only if its identifying metrics
        exist. `MetricsError` while Prometheus is unreachable or the names do not fit: a
        profile whose queries match nothing would read every namespace as idle, and idle
        reads as healthy (DESIGN section 3, rule 8)."""
        with self._discovery_lock:  # uncontended once found; a cheap price for one discovery
            if self._profile is not None:
                return self._profile
            if time.monotonic() < self._next_discovery:
                raise self._discovery_error()
            configured = self.configured_profile
            try:
                names = self._metric_names()
            except MetricsError as e:
                self._discovery_failed(
                    f"signal profile {configured}: cannot list metric names: {e}",
                    unavailable=isinstance(e, MetricsUnavailable),
                )
                raise self._discovery_error() from e
            if isinstance(self._configured, SignalProfile):
                found: SignalProfile | None = self._configured
                absent = sorted(set(self._configured.identify) - set(names))
                if absent:
                    self._discovery_failed(
                        f"signal profile {configured}: Prometheus at {self._url} has no "
                        f"{', '.join(absent)}, so its queries would read nothing (which is not "
                        "healthy); set STRATUS_SIGNAL_PROFILE to this cluster's convention (or "
                        "auto) or fix the profile file"
                    )
                    raise MetricsError(self._discovery_problem)
            else:
                found = detect(names)
            if found is None:
                self._discovery_failed(
                    f"signal profile auto: none of the {len(names)} metric names at {self._url} "
                    "matches a built-in profile; set STRATUS_SIGNAL_PROFILE or "
                    "STRATUS_SIGNAL_PROFILE_FILE"
                )
                raise MetricsError(self._discovery_problem)
            logger.info("signal profile %s: %s found at %s", configured, found.name, self._url)
            self._profile = found
            return found

    def _discovery_error(self) -> MetricsError:
        """The last discovery's failure, as the kind of error its cause was."""
        if self._discovery_unavailable:
            return MetricsUnavailable(self._discovery_problem)
        return MetricsError(self._discovery_problem)

    def _discovery_failed(self, problem: str, *, unavailable: bool = False) -> None:
        self._discovery_problem = problem
        self._discovery_unavailable = unavailable
        pause = min(self._rediscover_s, 2.0**self._failed_discoveries)
        self._failed_discoveries += 1
        self._next_discovery = time.monotonic() + pause
        logger.warning("%s (trying again in %.0fs)", problem, pause)

    def _metric_names(self) -> list[str]:
        try:
            names = self._client.all_metrics()
        except PrometheusApiClientException as e:
            raise MetricsError(f"{self._url}/api/v1/label/__name__/values failed: {e}") from e
        except requests.RequestException as e:
            raise self._unreachable(e) from e
        except (ValueError, KeyError, TypeError) as e:  # a 200 that is not a PromQL API's JSON
            raise MetricsError(
                f"{self._url}/api/v1/label/__name__/values did not answer as a PromQL API: {e!r}"
            ) from e
        if not isinstance(names, list):
            raise MetricsError(f"{self._url}/api/v1/label/__name__/values: not a list of names")
        return [str(n) for n in names]

    def _template(self, signal: str) -> tuple[SignalProfile, str]:
        profile = self.profile()
        template = profile.template(signal)
        if template is None:
            raise unreadable(profile, signal)
        return profile, template

    def _unreachable(self, error: Exception) -> MetricsError:
        d = self.deadline
        return MetricsUnavailable(
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

    def _by_service(self, signal: str, namespace: str, window_s: int) -> dict[str, float]:
        profile, template = self._template(signal)
        promql = render(template, namespace=namespace, window_s=window_s)
        label = profile.service_label
        return {
            str(r.get("metric", {}).get(label, "")): _value(r)
            for r in self._query(promql)
            if r.get("metric", {}).get(label)
        }

    def golden_signals(
        self, namespace: str, services: Sequence[str] | None = None, *, window_s: int = 60
    ) -> Mapping[str, GoldenSignals]:
        to_ms = self.profile().latency_unit.to_ms
        rate = self._by_service("request_rate", namespace, window_s)
        errors = self._by_service("error_rate", namespace, window_s)
        p50 = self._by_service("latency_p50", namespace, window_s)
        p99 = self._by_service("latency_p99", namespace, window_s)
        wanted = set(services) if services is not None else set(rate)
        return {
            name: GoldenSignals(
                service=name,
                request_rate=rate.get(name, 0.0),
                error_ratio=(errors.get(name, 0.0) / rate[name]) if rate.get(name) else 0.0,
                latency_p50_ms=p50.get(name, 0.0) * to_ms,
                latency_p99_ms=p99.get(name, 0.0) * to_ms,
            )
            for name in sorted(wanted)
        }

    def coverage(self, namespaces: Sequence[str]) -> dict[str, bool | None]:
        """For each signal (and the call graph): None when the profile has no query for it,
        else whether its query returns any series in one of `namespaces` (with none given,
        in any namespace). What `stratus doctor` reports."""
        profile = self.profile()
        out: dict[str, bool | None] = {}
        for signal in (*SIGNALS, CALL_GRAPH):
            template = profile.template(signal)
            if template is None:
                out[signal] = None
                continue
            if namespaces:
                queries = [render(template, namespace=ns, window_s=300) for ns in namespaces]
            else:
                any_namespace = template.replace('="$namespace"', '=~".+"')
                queries = [render(any_namespace, namespace="", window_s=300)]
            out[signal] = any(self._query(q) for q in queries)
        return out

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Alert]:
        matcher = f',namespace="{namespace}"' if namespace else ""
        promql = _ALERTS.format(namespace_matcher=matcher)
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
        if signal not in _CHARTED:
            raise QueryError(signal, f"unknown signal; use one of {', '.join(_CHARTED)}")
        profile = self.profile()
        parts = [self._template(name)[1] for name in _CHARTED[signal]]
        if signal == "error_ratio":
            template = f"({parts[0]}) / ({parts[1]})"
        elif signal == "latency_p99_ms":
            template = f"{profile.latency_unit.to_ms:g} * ({parts[0]})"
        else:
            template = parts[0]
        promql = render(template, namespace=namespace, window_s=60)
        step = max(1, int((end - start).total_seconds() // 200))
        try:
            result = self._client.custom_query_range(
                promql, start_time=start, end_time=end, step=f"{step}s"
            )
        except PrometheusApiClientException as e:
            raise QueryError(promql, str(e)) from e
        except requests.RequestException as e:
            raise self._unreachable(e) from e
        label = profile.service_label
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
        profile, template = self._template(CALL_GRAPH)
        labels = profile.call_graph_labels
        if labels is None:  # a profile file is checked for this; a built-in has both
            raise MetricsError(f"signal profile {profile.name} names no peer label")
        caller_label, peer_label = labels
        promql = render(template, namespace=namespace, window_s=window_s)
        edges = set()
        for r in self._query(promql):
            metric = r.get("metric") or {}
            caller, callee = metric.get(caller_label), metric.get(peer_label)
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
