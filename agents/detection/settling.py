"""Settling: an alert raised by a disruption the cluster has already repaired opens nothing.

A single-replica service whose pod is deleted (a node recycle, an eviction, a colleague's
`kubectl delete pod`) fails its callers' requests for the seconds its replacement takes to
start. Error-ratio rules read a one-minute window, so their alerts fire on that blip and keep
firing for about a minute after the replacement is Ready. Paging someone for it is noise.

What tells a repaired disruption from a fault is the cluster's own state, not the alert: a
workload with a pod started within the last `window_s` (well after the namespace's first pods:
a replacement, not a fresh deploy) of a ReplicaSet older than the disruption (the same
template: a rollout is a spec change, which may be the fault), every pod Ready with no restarts,
and the workload at its desired replicas. While the namespace shows one, an
alert that started after the disruption began is held until the window has passed: the
disruption's own alerts resolve by then; a fault's do not, and the alert then opens its
incident (once held, an alert is never held again). Crash loops, pods that cannot start or
be scheduled, and workloads short of replicas are not repaired, so they are never a reason
to hold.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agents.errors import ClusterError
from agents.model import PodState, Scope, WorkloadState
from agents.ports import ClusterReader

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Repaired:
    """A workload that recovered by itself from a disruption that began at `began`."""

    workload: str
    began: datetime  # the creation of its youngest pod: when the replacement started
    settled_by: datetime  # when alerts reading a window over the disruption should be gone


class Settling:
    def __init__(self, reader: ClusterReader, *, window_s: float = 90.0) -> None:
        """`window_s`: the longest alert window (rate over 1m) plus the time to start a pod."""
        self._reader = reader
        self._window = timedelta(seconds=window_s)

    def repaired(self, scope: Scope, now: datetime) -> Repaired | None:
        """The most recent self-repaired disruption in the scope, if one is still settling.
        A failed read answers None: what cannot be read is no reason to hold an alert."""
        try:
            workloads = self._reader.workloads(scope.namespace)
            pods = self._reader.pods(scope.namespace)
        except ClusterError as e:
            logger.info("settling: cannot read %s (%s); holding nothing", scope.key, e)
            return None
        born = [p.created_at for p in pods if p.created_at is not None]
        if not born:
            return None
        # Pods as young as the namespace's oldest are its first pods (a fresh deploy), not
        # replacements: only a pod started well after the namespace came up replaced one.
        first = min(born) + self._window
        best: Repaired | None = None
        for w in workloads:
            found = self._repaired_workload(scope, w, pods, now, first)
            if found is not None and (best is None or found.settled_by > best.settled_by):
                best = found
        return best

    def _repaired_workload(
        self,
        scope: Scope,
        w: WorkloadState,
        pods: Sequence[PodState],
        now: datetime,
        first: datetime,
    ) -> Repaired | None:
        """The workload's disruption if it repaired itself: converged, every pod ready with no
        restart, its youngest pod a recent replacement of the same template."""
        if w.replicas == 0 or not w.converged:
            return None
        own = _selected(w, pods)
        if len(own) != w.replicas or not all(_fresh(p) for p in own):
            return None
        youngest = max(p.created_at for p in own if p.created_at is not None)
        if now - youngest >= self._window or youngest <= first:
            return None
        pod_owner = next(p.owner for p in own if p.created_at == youngest)
        if self._rolled_out(scope, w.kind, w.name, pod_owner, youngest):
            return None
        return Repaired(workload=w.name, began=youngest, settled_by=youngest + self._window)

    def _rolled_out(
        self, scope: Scope, kind: str, name: str, owner: str | None, born: datetime
    ) -> bool:
        """Whether the young pod came with a new revision (a rollout: a spec change, which may
        be the fault) rather than replacing a pod of the same template. Unknown counts as a
        rollout: only a disruption known to have changed nothing is held."""
        if kind != "Deployment":
            return False  # a StatefulSet replaces its pods in place, revision or not
        try:
            history = self._reader.rollout_history(scope.namespace, name)
        except ClusterError:
            return True
        replica_set = (owner or "").removeprefix("ReplicaSet/")
        revision = next((r for r in history if r.replica_set == replica_set), None)
        if revision is None or revision.created_at is None:
            return True
        return born - revision.created_at < self._window


def _selected(workload: WorkloadState, pods: Sequence[PodState]) -> list[PodState]:
    selector = workload.selector.items()
    return [p for p in pods if p.labels and all(p.labels.get(k) == v for k, v in selector)]


def _fresh(pod: PodState) -> bool:
    """Ready, never restarted, with a known start: a pod that replaced one and is fine."""
    return pod.ready and not pod.restart_count and pod.created_at is not None
