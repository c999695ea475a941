"""Facts: the observations re-read per service, as the rules ask about them.

For every service: its pod symptoms, the signs in its own log tails (current and previous),
who blames it (callers' error lines that name it, with the kind of failure), and the changes
and last-known-good differences that touch it. Rules are then short: "OOMKilled and a
memory limit" rather than a loop over pods.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from agents.diagnosis.changes import proximity
from agents.diagnosis.handlers import Handler
from agents.diagnosis.logs import anomalous_services
from agents.diagnosis.observe import FieldDiff, Observations, PodDrift
from agents.diagnosis.signs import Blamer, Sign, classify, is_error_line
from agents.diagnosis.state import PodSymptoms, pod_symptoms
from agents.model import Change, EventRecord, GoldenSignals

#: The field manager Stratus writes with (the engine's and `ClusterWriter`'s default): its
#: own changes are never a suspect nor a "last known good" value.
STRATUS_MANAGER = "stratus"


@dataclass(frozen=True, slots=True, kw_only=True)
class Touch:
    """A change (journal record or last-known-good difference) of one field of an object."""

    key: str  # evidence key
    kind: str
    name: str
    path: str
    old: str | None
    new: str | None
    manager: str | None = None  # None for last-known-good differences
    weight: float = 1.0  # proximity to the incident start


@dataclass(slots=True, kw_only=True)
class Blame:
    """Callers' error lines that name this service, by caller, with the signs they show."""

    by: dict[str, set[Sign]] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def signs(self) -> set[Sign]:
        return {s for signs in self.by.values() for s in signs}


class Facts:
    def __init__(self, obs: Observations, handler: Handler) -> None:
        self.obs = obs
        self.handler = handler
        self.ns = obs.scope.namespace
        self.symptoms: dict[str, PodSymptoms] = {
            s: pod_symptoms(obs.pods.get(s, ())) for s in obs.service_names | set(obs.pods)
        }
        self.blame: dict[str, Blame] = {}
        self._own: dict[tuple[str, bool], dict[Sign, list[str]]] = {}
        self._read_logs()

    # ------------------------------------------------------------------------- logs

    def _read_logs(self) -> None:
        obs = self.obs
        addresses = {
            svc.cluster_ip: obs.service_for_k8s_service(svc.name) or svc.name
            for svc in obs.services.values()
            if svc.cluster_ip
        }
        blamer = Blamer(obs.service_names | set(obs.services), addresses)
        for service, tails in obs.logs.items():
            for tail in tails:
                own = self._own.setdefault((service, tail.previous), {})
                for line in tail.lines:
                    sign = classify(line)
                    if sign is None:
                        continue
                    own.setdefault(sign, []).append(line)
                    if re.search(r"^\s*panic:|goroutine \d+ \[", line) and sign is not Sign.PANIC:
                        own.setdefault(Sign.PANIC, []).append(line)
                    if not is_error_line(line):
                        continue
                    for name in blamer.blamed(line, own=service):
                        target = obs.service_for_k8s_service(name) or name
                        b = self.blame.setdefault(target, Blame())
                        b.by.setdefault(service, set()).add(sign)
                        if tail.key not in b.keys:
                            b.keys.append(tail.key)
                        if len(b.lines) < 5:
                            b.lines.append(line.strip())

    def own_signs(self, service: str, *, previous: bool | None = None) -> dict[Sign, list[str]]:
        """Signs in the service's own logs (previous containers, current, or both)."""
        out: dict[Sign, list[str]] = {}
        for prev in (True, False) if previous is None else (previous,):
            for sign, lines in self._own.get((service, prev), {}).items():
                out.setdefault(sign, []).extend(lines)
        return out

    # ------------------------------------------------------------------- anomalies

    @cached_property
    def anomalous(self) -> set[str]:
        found = set(anomalous_services(self.obs, self.handler))
        for name, blame in self.blame.items():
            if any(c in found for c in blame.by):
                found.add(name)
        return found

    def signal(self, service: str) -> GoldenSignals | None:
        return self.obs.signals.get(service)

    def slow(self, service: str) -> bool:
        s = self.signal(service)
        t = self.handler.thresholds
        return (
            s is not None
            and s.request_rate >= t.min_request_rate
            and (s.latency_p99_ms >= t.latency_p99_ms)
        )

    def failing(self, service: str) -> bool:
        s = self.signal(service)
        t = self.handler.thresholds
        return (
            s is not None
            and s.request_rate >= t.min_request_rate
            and (s.error_ratio >= t.error_ratio)
        )

    def drifted(self, service: str) -> list[PodDrift]:
        """Container fields of the service's pods that differ from their owner's template."""
        return list(self.obs.pod_drift.get(service, ()))

    def only_changed_pods_fail(self, service: str) -> bool:
        """Every unwell pod of the service was changed outside its controller: what they
        show says nothing about the template a fresh pod would run."""
        changed = {d.pod for d in self.drifted(service)}
        unwell = {
            p.name
            for p in self.obs.pods.get(service, ())
            if not p.ready or any(c.state != "running" or c.restart_count for c in p.containers)
        }
        return bool(changed) and unwell <= changed

    def events(self, service: str) -> Iterator[EventRecord]:
        pods = {p.name for p in self.obs.pods.get(service, ())}
        for e in self.obs.events:
            if (
                e.object_name in pods
                or e.object_name == service
                or (e.object_kind == "ReplicaSet" and e.object_name.rsplit("-", 1)[0] == service)
            ):
                yield e

    def keys(self, service: str, *groups: str) -> list[str]:
        """Evidence keys the collector filed under the service, for the given groups."""
        groups = groups or (
            "pods",
            "events",
            "logs",
            "service",
            "signals",
            "changes",
            "drift",
            "cpu",
        )
        out: list[str] = []
        for group in groups:
            out += self.obs.cited(f"{group}:{service}")
        return out

    # --------------------------------------------------------------------- changes

    @cached_property
    def touches(self) -> list[Touch]:
        out: list[Touch] = []
        for key, change in self.obs.changes:
            out += list(_from_change(key, change, proximity(change, self.obs.started_at)))
        for key, diff in self.obs.drift:
            out.append(_from_diff(key, diff))
        return out

    def touched(self, kind: str | None, name: str, pattern: str) -> list[Touch]:
        """Changes of `name` (of `kind`, any workload kind when None) whose path matches."""
        rx = re.compile(pattern, re.I)
        kinds = (kind,) if kind else ("Deployment", "StatefulSet")
        return [t for t in self.touches if t.kind in kinds and t.name == name and rx.search(t.path)]

    def changed_recently(self, service: str) -> list[Touch]:
        spec = self.obs.specs.get(service)
        config_maps = spec.config_maps() if spec else set()
        services = {s.name for s in self.obs.k8s_services_for(service)}
        return [
            t
            for t in self.touches
            if (t.kind in ("Deployment", "StatefulSet") and t.name == service)
            or (t.kind == "ConfigMap" and t.name in config_maps)
            or (t.kind == "Service" and t.name in services)
        ]


def _from_change(key: str, change: Change, weight: float) -> Iterator[Touch]:
    for path, pair in change.diff.items():
        old, new = pair if isinstance(pair, tuple | list) and len(pair) == 2 else (None, pair)
        yield Touch(
            key=key,
            kind=change.kind,
            name=change.name,
            path=path,
            old=None if old is None else str(old),
            new=None if new is None else str(new),
            manager=change.manager,
            weight=weight,
        )


def _from_diff(key: str, diff: FieldDiff) -> Touch:
    return Touch(
        key=key, kind=diff.kind, name=diff.name, path=diff.path, old=diff.old, new=diff.new
    )
