"""The simulator's metric registry and its history in lab time.

`live` holds the current value of every series (counters cumulative, as Prometheus scrapes
them); `scrape(t)` appends the live values to the history, like a Prometheus scraping every
`scrape_interval_s` of lab time. History is columnar (one timestamp array, one value array
per series, aligned by index) and trimmed to `retention_s`, so a long demo stays bounded.
A series absent at a scrape (a deleted pod's) is stale from then on, as in Prometheus.

Metric names (all carry `namespace`):

    http_server_requests_total{service, code}                 counter, requests a workload served
    http_server_request_duration_seconds_bucket{service, le}  histogram (+ _sum, _count)
    http_client_requests_total{service, peer, code}           counter, calls as the caller saw
                                                              them (service="loadgenerator" is
                                                              the outside load); 503 = refused
                                                              or no such host, 504 = timed out
    container_cpu_usage_seconds_total{pod, container}         counter
    container_cpu_cfs_periods_total / _throttled_periods_total{pod, container}
    container_memory_working_set_bytes{pod, container}        gauge
    kube_pod_status_ready{pod, condition}                     kube-state-metrics, gauges
    kube_pod_status_phase{pod, phase}
    kube_pod_container_status_ready{pod, container}
    kube_pod_container_status_restarts_total{pod, container}
    kube_pod_container_status_waiting_reason{pod, container, reason}
    kube_pod_container_status_last_terminated_reason{pod, container, reason}
    kube_pod_container_resource_limits{pod, container, resource, unit}
    kube_pod_container_resource_requests{pod, container, resource, unit}
    kube_deployment_spec_replicas{deployment}
    kube_deployment_status_replicas_available{deployment}
    kube_deployment_status_replicas_unavailable{deployment}
"""

from __future__ import annotations

import bisect
import functools
import logging
import math
import threading
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import isnan

from lab.sim.outcome import JITTER

logger = logging.getLogger(__name__)

LabelSet = tuple[tuple[str, str], ...]
SeriesKey = tuple[str, LabelSet]

#: Latency buckets in seconds: the Prometheus client defaults, plus two below 5 ms.
BUCKETS_S: tuple[float, ...] = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
_LOG_BUCKETS_MS = tuple(math.log(b * 1000.0) for b in BUCKETS_S)
_BUCKET_TEXT = (*(repr(b) for b in BUCKETS_S), "+Inf")
_SQRT2 = math.sqrt(2.0)
_MEAN_FACTOR = math.exp(JITTER * JITTER / 2.0)  # mean / median of the log-normal

TYPES: dict[str, tuple[str, str]] = {
    "http_server_requests_total": ("counter", "Requests served, by status code."),
    "http_server_request_duration_seconds": ("histogram", "Server-side request latency."),
    "http_client_requests_total": (
        "counter",
        "Calls made, by peer and status as seen by the caller.",
    ),
    "container_cpu_usage_seconds_total": ("counter", "CPU time consumed."),
    "container_cpu_cfs_periods_total": ("counter", "Elapsed CFS enforcement periods."),
    "container_cpu_cfs_throttled_periods_total": ("counter", "Throttled CFS periods."),
    "container_memory_working_set_bytes": ("gauge", "Working set memory."),
    "kube_pod_status_ready": ("gauge", "Pod ready condition."),
    "kube_pod_status_phase": ("gauge", "Pod phase."),
    "kube_pod_container_status_ready": ("gauge", "Container readiness."),
    "kube_pod_container_status_restarts_total": ("counter", "Container restarts."),
    "kube_pod_container_status_waiting_reason": ("gauge", "Why a container is waiting."),
    "kube_pod_container_status_last_terminated_reason": ("gauge", "Why it last terminated."),
    "kube_pod_container_resource_limits": ("gauge", "Container resource limits."),
    "kube_pod_container_resource_requests": ("gauge", "Container resource requests."),
    "kube_deployment_spec_replicas": ("gauge", "Desired replicas."),
    "kube_deployment_status_replicas_available": ("gauge", "Available replicas."),
    "kube_deployment_status_replicas_unavailable": ("gauge", "Unavailable replicas."),
}


def labels(**pairs: str) -> LabelSet:
    return _labels(tuple(pairs.items()))


@functools.lru_cache(maxsize=16384)
def _labels(pairs: tuple[tuple[str, str], ...]) -> LabelSet:
    return tuple(sorted(pairs))


@functools.lru_cache(maxsize=4096)
def bucket_shares(median_ms: float) -> tuple[float, ...]:
    """P(latency ≤ le) for each bucket, for a log-normal latency with this median."""
    if median_ms <= 0:
        return (1.0,) * len(BUCKETS_S)
    log_m = math.log(median_ms)
    return tuple(0.5 * math.erfc(-(lb - log_m) / JITTER / _SQRT2) for lb in _LOG_BUCKETS_MS)


@functools.lru_cache(maxsize=4096)
def _bucket_keys(name: str, labelset: LabelSet) -> tuple[SeriesKey, ...]:
    return tuple((f"{name}_bucket", tuple(sorted((*labelset, ("le", le))))) for le in _BUCKET_TEXT)


@dataclass(slots=True)
class _Column:
    start: int  # global scrape index of values[0]
    values: array[float]


class MetricStore:
    def __init__(self, *, scrape_interval_s: float = 5.0, retention_s: float = 3600.0) -> None:
        self.scrape_interval_s = scrape_interval_s
        self._max_points = max(2, int(retention_s / scrape_interval_s))
        self.lock = threading.RLock()
        self.live: dict[SeriesKey, float] = {}
        self._groups: dict[str, set[SeriesKey]] = {}
        self._times: array[float] = array("d")
        self._offset = 0  # global index of _times[0]
        self._columns: dict[SeriesKey, _Column] = {}
        #: The history's keys by metric name, in the order they entered it (`keys()` is on
        #: every PromQL selector's path; scanning every column for a name was its cost).
        self._by_name: dict[str, dict[SeriesKey, None]] = {}
        #: Bumped whenever a series enters or leaves the history, so a view of the store in
        #: another convention (`lab.sim.convention_view`) knows when to map keys again.
        self.generation = 0

    # ------------------------------------------------------------------ live values

    def inc(self, name: str, labelset: LabelSet, value: float) -> None:
        key = (name, labelset)
        self.live[key] = self.live.get(key, 0.0) + value

    def observe(
        self, name: str, labelset: LabelSet, components: Iterable[tuple[float, float]]
    ) -> None:
        """Add `weight` requests at each log-normal `median_ms` to a histogram."""
        live = self.live
        counts = [0.0] * len(BUCKETS_S)
        total = total_sum = 0.0
        for weight, median_ms in components:
            if weight <= 0:
                continue
            total += weight
            total_sum += weight * median_ms * _MEAN_FACTOR / 1000.0
            for i, share in enumerate(bucket_shares(median_ms)):
                counts[i] += weight * share
        if total <= 0:
            return
        for key, count in zip(_bucket_keys(name, labelset), [*counts, total], strict=True):
            live[key] = live.get(key, 0.0) + count
        for suffix, value in (("_sum", total_sum), ("_count", total)):
            key = (name + suffix, labelset)
            live[key] = live.get(key, 0.0) + value

    def set_group(self, group: str, values: Mapping[SeriesKey, float]) -> None:
        """Replace every series of a group (kube-state gauges rebuilt from objects)."""
        with self.lock:
            for key in self._groups.get(group, set()) - values.keys():
                self.live.pop(key, None)
            self.live.update(values)
            self._groups[group] = set(values)

    def drop(self, predicate: Mapping[str, str]) -> None:
        """Forget live series whose labels include all of `predicate` (a deleted pod's)."""
        items = tuple(predicate.items())
        with self.lock:
            for key in [k for k in self.live if all(i in k[1] for i in items)]:
                del self.live[key]

    # ---------------------------------------------------------------------- history

    def scrape(self, t: float) -> None:
        with self.lock:
            index = self._offset + len(self._times)
            self._times.append(t)
            for key, value in self.live.items():
                col = self._columns.get(key)
                if col is None:
                    self._columns[key] = _Column(start=index, values=array("d", [value]))
                    self._by_name.setdefault(key[0], {})[key] = None
                    self.generation += 1
                    continue
                gap = index - (col.start + len(col.values))
                if gap > 0:
                    col.values.extend([math.nan] * gap)
                col.values.append(value)
            if len(self._times) > self._max_points + 64:
                self._trim(len(self._times) - self._max_points)

    def _trim(self, drop: int) -> None:
        del self._times[:drop]
        self._offset += drop
        for key in list(self._columns):
            col = self._columns[key]
            cut = self._offset - col.start
            if cut <= 0:
                continue
            if cut >= len(col.values):
                del self._columns[key]
                named = self._by_name[key[0]]
                del named[key]
                if not named:
                    del self._by_name[key[0]]
                self.generation += 1
                continue
            del col.values[:cut]
            col.start = self._offset

    def names(self) -> set[str]:
        with self.lock:
            return set(self._by_name) | {k[0] for k in self.live}

    def keys(self, name: str) -> list[SeriesKey]:
        with self.lock:
            return list(self._by_name.get(name, ()))

    def all_keys(self) -> list[SeriesKey]:
        """Every series in the history."""
        with self.lock:
            return list(self._columns)

    def samples(self, key: SeriesKey, t0: float, t1: float) -> list[tuple[float, float]]:
        """The scraped (t, value) points of a series with t0 ≤ t ≤ t1, stale points left out."""
        with self.lock:
            col = self._columns.get(key)
            if col is None:
                return []
            times, first = self._times, col.start - self._offset  # first: col.values[0]'s index
            lo = max(bisect.bisect_left(times, t0), first)
            hi = min(bisect.bisect_right(times, t1), first + len(col.values))
            if hi <= lo:
                return []
            values = col.values[lo - first : hi - first]
            points = zip(times[lo:hi], values, strict=True)
            return [(t, v) for t, v in points if not isnan(v)]  # NaN: stale at that scrape

    def latest(self, key: SeriesKey, t: float, lookback_s: float) -> float | None:
        """The newest point at or before t within the lookback, unless the series went stale."""
        with self.lock:
            col = self._columns.get(key)
            if col is None:
                return None
            i = bisect.bisect_right(self._times, t) - 1
            if i < 0 or self._times[i] < t - lookback_s:
                return None
            j = i + self._offset - col.start
            if j < 0 or j >= len(col.values):
                return None  # absent at the newest scrape: stale
            value = col.values[j]
            return None if math.isnan(value) else value

    def last_scrape(self) -> float | None:
        with self.lock:
            return self._times[-1] if self._times else None
