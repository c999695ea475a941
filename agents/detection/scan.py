"""The periodic scan: synthetic alerts from pod states, workloads, events and golden signals.

Alertmanager only knows what Prometheus rules say; the scan covers a cluster without them (the
lab, a fresh install) and conditions rules rarely express (ImagePullBackOff, FailedCreate).
It is a small rule evaluator with Prometheus's semantics:

* each rule (`agents.detection.scan_rules`) yields the conditions it sees *now*;
* a condition becomes a firing `Alert` once it has held for its `for_s` (from the first scan
  that saw it: that instant is the alert's `starts_at`, which the detector's grace reads);
* a condition that was firing and is no longer seen yields a resolved alert, once;
* a read that fails keeps that family's conditions as they were — an API outage must not
  resolve every alert.

Fingerprints are deterministic (cluster, namespace, alert name, subject), so the same
condition is the same alert on every scan and after a restart. Reads are per covered
namespace; pods and workloads are read whole (a pod list cut in name order missed a failing
app whose pods sorted after a thousand others), events are the newest `ScanConfig.max_events`.
The bot gives the scanner a `ClusterCache`, so a scan costs the API server nothing once the
namespace's watches are synced. The scanner keeps state between
calls; calls must not overlap (the scheduler runs one job at a time, the headless driver is
single-threaded).
"""

from __future__ import annotations

import hashlib
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from agents.detection.scan_rules import (
    CLUSTER,
    METRICS,
    Finding,
    ScanConfig,
    event_findings,
    pod_findings,
    slo_findings,
    workload_findings,
)
from agents.errors import ClusterError, MetricsError
from agents.model import Alert, AlertStatus, PodState
from agents.ports import Clock, ClusterReader, MetricsSource

logger = logging.getLogger(__name__)

SCAN_SOURCE = "scan"
#: Restart-count samples kept per container (a scan every few seconds still spans minutes).
_MAX_SAMPLES = 256


@dataclass(slots=True)
class _Condition:
    finding: Finding
    first_seen: datetime
    fingerprint: str


class Scanner:
    def __init__(
        self,
        *,
        reader: ClusterReader,
        metrics: MetricsSource | None,
        clock: Clock,
        namespaces: Sequence[str],
        config: ScanConfig | None = None,
    ) -> None:
        self._reader = reader
        self._metrics = metrics
        self._clock = clock
        self._namespaces = tuple(namespaces)
        self._config = config or ScanConfig()
        self._cluster = reader.cluster_name
        self._conditions: dict[tuple[str, str, str], _Condition] = {}
        self._firing: dict[tuple[str, str, str], Alert] = {}
        self._restarts: dict[tuple[str, str, str], deque[tuple[datetime, int]]] = {}

    def fingerprint(self, namespace: str, name: str, subject: str) -> str:
        text = f"{self._cluster}\x00{namespace}\x00{name}\x00{subject}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def scan(self, namespaces: Sequence[str] | None = None) -> list[Alert]:
        """Firing alerts for conditions that have held long enough, and resolved alerts for
        those that stopped, in a deterministic order."""
        now = self._clock.now()
        alerts: list[Alert] = []
        for namespace in namespaces if namespaces is not None else self._namespaces:
            alerts += self._scan_namespace(namespace, now)
        return alerts

    def _scan_namespace(self, namespace: str, now: datetime) -> list[Alert]:
        seen: dict[tuple[str, str, str], Finding] = {}
        for family, findings in (
            (CLUSTER, self._cluster_findings(namespace, now)),
            (METRICS, self._metric_findings(namespace)),
        ):
            if findings is None:  # the read failed: keep what we had
                seen.update(
                    (key, c.finding)
                    for key, c in self._conditions.items()
                    if key[0] == namespace and c.finding.family == family
                )
            else:
                seen.update((f.key, f) for f in findings)

        out: list[Alert] = []
        for key, finding in sorted(seen.items()):
            condition = self._conditions.get(key)
            if condition is None:
                condition = self._conditions[key] = _Condition(
                    finding=finding,
                    first_seen=now,
                    fingerprint=self.fingerprint(*key),
                )
            condition.finding = finding
            if now - condition.first_seen >= timedelta(seconds=finding.for_s):
                alert = self._alert(condition, AlertStatus.FIRING)
                self._firing[key] = alert
                out.append(alert)
        for key in sorted(k for k in self._conditions if k[0] == namespace and k not in seen):
            del self._conditions[key]
            fired = self._firing.pop(key, None)
            if fired is not None:
                out.append(replace(fired, status=AlertStatus.RESOLVED, ends_at=now))
        return out

    def _alert(self, condition: _Condition, status: AlertStatus) -> Alert:
        f = condition.finding
        labels = {
            "alertname": f.name,
            "namespace": f.namespace,
            "severity": f.severity,
            "service": f.subject,
            "cluster": self._cluster,
            **f.labels,
        }
        return Alert(
            fingerprint=condition.fingerprint,
            name=f.name,
            status=status,
            labels=labels,
            annotations={"summary": f.summary},
            starts_at=condition.first_seen,
            source=SCAN_SOURCE,
        )

    # --------------------------------------------------------------------------- reads

    def _cluster_findings(self, namespace: str, now: datetime) -> list[Finding] | None:
        config = self._config
        try:
            pods = list(self._reader.pods(namespace))
            workloads = list(self._reader.workloads(namespace))
            events = list(self._reader.events(namespace, limit=config.max_events))
        except ClusterError as e:
            logger.warning("scan of %s/%s: cluster read failed: %s", self._cluster, namespace, e)
            return None
        increase = self._restart_increase(namespace, pods, now)
        return (
            pod_findings(namespace, pods, workloads, increase, config)
            + workload_findings(namespace, workloads, config)
            + event_findings(namespace, events, workloads, now, config)
        )

    def _metric_findings(self, namespace: str) -> list[Finding] | None:
        if self._metrics is None:
            return []
        try:
            signals = self._metrics.golden_signals(namespace, window_s=self._config.slo_window_s)
        except MetricsError as e:
            logger.warning("scan of %s/%s: metrics read failed: %s", self._cluster, namespace, e)
            return None
        return slo_findings(namespace, signals, self._config)

    def _restart_increase(
        self, namespace: str, pods: Sequence[PodState], now: datetime
    ) -> dict[tuple[str, str], int]:
        """Restarts per (pod, container) within the restart window, from the counts this
        scanner has observed (a count seen once has no known increase yet)."""
        window = timedelta(seconds=self._config.restart_window_s)
        increase: dict[tuple[str, str], int] = {}
        alive = set()
        for pod in pods:
            for c in pod.containers:
                key = (namespace, pod.name, c.name)
                alive.add(key)
                samples = self._restarts.setdefault(key, deque(maxlen=_MAX_SAMPLES))
                samples.append((now, c.restart_count))
                while samples and now - samples[0][0] > window:
                    samples.popleft()
                increase[(pod.name, c.name)] = c.restart_count - samples[0][1]
        for key in [k for k in self._restarts if k[0] == namespace and k not in alive]:
            del self._restarts[key]
        return increase
