"""The evidence collector: runs one handler against the read ports.

It answers "what changed just before it broke?" first (the change journal), then reads the
namespace's inventory once (workloads, pods, Services with endpoints, ConfigMaps, events —
one bounded list call each), the golden signals and the call graph, then log tails following
the handler's widening order, then each changed object against its last known good, CPU
saturation, nodes and quotas. Every read is scoped to the incident's namespace and bounded by
the handler; a read that fails becomes a gap in the record, never an exception.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from agents import kubeparse
from agents.diagnosis import changes as change_reads
from agents.diagnosis import logs as log_reads
from agents.diagnosis import metrics as metric_reads
from agents.diagnosis import podspec as pod_reads
from agents.diagnosis.graph import add_config_edges
from agents.diagnosis.handlers import Handler
from agents.diagnosis.items import Item, make_item
from agents.diagnosis.netpolicy import parse_network_policy
from agents.diagnosis.observe import (
    Observations,
    ServiceSpec,
    WorkloadSpec,
    parse_workload_spec,
    target_port,
)
from agents.diagnosis.ports import JournalView, Redactor
from agents.diagnosis.state import (
    PodSymptoms,
    describe_pod,
    describe_workload,
    pod_symptoms,
    short_reason,
)
from agents.errors import MetricsUnavailable, StratusError, TransientError
from agents.model import (
    Alert,
    AlertStatus,
    ConfigMapInfo,
    EventRecord,
    EvidenceKind,
    Incident,
    KubeObject,
    NodeInfo,
    PodState,
    ServiceInfo,
    WorkloadState,
)
from agents.ports import Clock, ClusterReader, MetricsSource
from agents.redact import redact_entries as redact_mapping

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _no_answer(error: StratusError) -> bool:
    """The source did not answer, as opposed to answering no (a refusal, a bad query, a
    signal profile that fits nothing: those are gaps a diagnosis goes on with)."""
    return isinstance(error, TransientError | MetricsUnavailable)


class Collector:
    def __init__(
        self,
        *,
        cluster: ClusterReader,
        metrics: MetricsSource | None,
        journal: JournalView | None,
        redactor: Redactor,
        clock: Clock,
    ) -> None:
        self.cluster = cluster
        self.metrics = metrics
        self.journal = journal
        self.redactor = redactor
        self.clock = clock

    def read_one(
        self, obs: Observations, what: str, fn: Callable[[], T], *, core: bool = False
    ) -> T | None:
        """One bounded read; a failure is recorded as a gap and yields None. A `core` read
        that failed because its source did not answer (a timeout, a refused connection, a
        5xx; Prometheus unreachable — not a refusal such as 403 or a bad query) also goes to
        `obs.unavailable`."""
        try:
            return fn()
        except StratusError as e:
            logger.info("diagnosis read failed: %s: %s", what, e)
            obs.gaps.append(f"{what}: {self.redactor(str(e))[:200]}")
            if core and _no_answer(e):
                obs.unavailable.append(f"{what}: {self.redactor(str(e))[:200]}")
            return None

    def read_many(
        self,
        obs: Observations,
        what: str,
        fn: Callable[[], Iterable[T]],
        *,
        core: bool = False,
    ) -> list[T]:
        found = self.read_one(obs, what, fn, core=core)
        return list(found) if found is not None else []

    def collect(
        self, incident: Incident, alerts: Sequence[Alert], handler: Handler
    ) -> tuple[Observations, list[Item]]:
        firing = [a for a in alerts if a.status is AlertStatus.FIRING] or list(alerts)
        started = min([a.starts_at for a in firing], default=incident.opened_at)
        obs = Observations(scope=incident.scope, now=self.clock.now(), started_at=started)
        items: list[Item] = []
        items += self._alerts(alerts)
        items += change_reads.read_changes(self, obs, handler)  # the first question
        self._inventory(obs, handler)
        if obs.unavailable:
            return obs, items  # blind: each further read would wait out its deadline too
        obs.alerting = self._alerting(obs, incident, alerts)
        items += self._pods(obs)
        items += pod_reads.read_drift(self, obs)
        items += self._events(obs, handler)
        items += self._services(obs, handler)
        items += metric_reads.read_signals(self, obs, handler)
        add_config_edges(obs)
        items += log_reads.read_logs(self, obs, handler)
        items += metric_reads.graph_item(self, obs)
        items += change_reads.read_drift(self, obs, handler)
        items += metric_reads.read_saturation(self, obs, handler)
        items += self._nodes(obs, handler)
        items += self._quotas(obs, handler)
        items += self._network_policies(obs)
        if obs.notes:
            items.append(
                make_item(
                    key="selection",
                    kind=EvidenceKind.ALERT,
                    source="diagnosis",
                    summary="; ".join(obs.notes[:5]),
                    detail="\n".join(obs.notes[:40]),
                    redactor=self.redactor,
                    relevance=0.1,
                )
            )
        if obs.gaps:
            items.append(
                make_item(
                    key="gaps",
                    kind=EvidenceKind.ALERT,
                    source="diagnosis",
                    summary=f"{len(obs.gaps)} reads failed; evidence may be incomplete",
                    detail="\n".join(obs.gaps[:20]),
                    redactor=self.redactor,
                    relevance=0.2,
                )
            )
        return obs, items

    # --------------------------------------------------------------------------- reads

    def _alerts(self, alerts: Sequence[Alert]) -> list[Item]:
        out = []
        for i, alert in enumerate(alerts[:10]):
            labels = ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()))
            note = alert.annotations.get("summary") or alert.annotations.get("description", "")
            out.append(
                make_item(
                    key=f"alert:{i}",
                    kind=EvidenceKind.ALERT,
                    source=f"alert/{alert.fingerprint}",
                    summary=f"alert {alert.name} {alert.status} since {alert.starts_at:%H:%M:%S}"
                    + (f": {note}" if note else ""),
                    service=alert.service,
                    detail=labels,
                    redactor=self.redactor,
                    relevance=0.5,
                    at=alert.starts_at,
                )
            )
        return out

    def _inventory(self, obs: Observations, handler: Handler) -> None:
        ns = obs.scope.namespace
        c = self.cluster
        # Each kind is read once: a workload's state and its pod template come from the same
        # object, a Service's spec and its ready endpoints from one `services` read.
        for kind in ("Deployment", "StatefulSet"):
            for body in self.read_many(obs, f"{kind}s", _lister(c, "apps/v1", kind, ns), core=True):
                spec = parse_workload_spec(body.body, self.redactor)
                obs.specs[spec.name] = spec
                obs.workloads[spec.name] = kubeparse.parse_workload(body.body)
        # Every pod of the namespace, grouped by service; no cut in name order (the failing
        # app's pods may sort after thousands of others). The cap is per service and keeps
        # the pods that are not ready.
        owners = _PodOwners(obs)
        grouped: dict[str, list[PodState]] = {}
        for pod in self.read_many(obs, "pods", lambda: c.pods(ns), core=True):
            service = owners.service_of(pod)
            obs.pod_services[pod.name] = service
            grouped.setdefault(service, []).append(pod)
        limit = handler.collect.pods.limit
        obs.pods = {k: _keep_relevant(obs, k, v, limit) for k, v in grouped.items()}
        for info in self.read_many(obs, "services", lambda: c.services(ns)):
            obs.services[info.name] = service_spec(info)
        for cm in self.read_many(obs, "config maps", lambda: c.config_maps(ns)):
            obs.config_maps[cm.name] = ConfigMapInfo(
                name=cm.name, namespace=cm.namespace, data=redact_mapping(cm.data, self.redactor)
            )
        limit = handler.collect.events.limit
        obs.events = tuple(self.read_many(obs, "events", lambda: c.events(ns, limit=limit)))[:limit]
        if len(obs.events) >= limit:
            # The reader returns the newest first: what is dropped is the older history.
            obs.notes.append(f"events: the newest {limit} kept, older ones not read")

    def service_of_object(self, obs: Observations, kind: str, name: str) -> str | None:
        if kind in ("Deployment", "StatefulSet") or name in obs.workloads:
            return name if name in obs.service_names else None
        if kind == "Pod":
            return obs.pod_services.get(name)
        if kind == "ReplicaSet":
            base = name.rsplit("-", 1)[0]
            return base if base in obs.service_names else None
        if kind == "Service":
            return obs.service_for_k8s_service(name) or name
        return None

    def _alerting(
        self, obs: Observations, incident: Incident, alerts: Sequence[Alert]
    ) -> tuple[str, ...]:
        names: list[str] = []
        candidates = [incident.service] + [a.service for a in alerts]
        for alert in alerts:
            for label in ("pod", "job", "app", "container", "service_name", "destination_service"):
                candidates.append(alert.labels.get(label))
        for candidate in candidates:
            if not candidate:
                continue
            service = candidate if candidate in obs.service_names else None
            if service is None:
                service = self.service_of_object(obs, "Pod", candidate)
            if service is None:
                service = obs.service_for_k8s_service(candidate)
            if service is not None and service in obs.service_names and service not in names:
                names.append(service)
        return tuple(names)

    def _pods(self, obs: Observations) -> list[Item]:
        out = []
        healthy: list[str] = []
        for service in sorted(obs.service_names | set(obs.pods)):
            item = self._pod_item(obs, service)
            if item is None:
                healthy.append(service)
            else:
                out.append(item)
        if healthy:
            out.append(
                make_item(
                    key="pods:healthy",
                    kind=EvidenceKind.POD_STATE,
                    source=f"pods/{obs.scope.namespace}",
                    summary=f"{len(healthy)} service{'' if len(healthy) == 1 else 's'} with "
                    "all pods ready and no restarts",
                    detail=", ".join(healthy),
                    redactor=self.redactor,
                    relevance=0.15,
                )
            )
        return out

    def _pod_item(self, obs: Observations, service: str) -> Item | None:
        """One service's pods as evidence; None when all are ready and none restarted (those
        services are listed together, in one item)."""
        pods = obs.pods.get(service, ())
        symptoms = pod_symptoms(pods)
        workload = obs.workloads.get(service)
        lacking = _lacks_replicas(workload)
        anomalous = symptoms.intrinsic or lacking or symptoms.ready < symptoms.total
        if not anomalous and symptoms.restarts == 0:
            return None
        key = f"pods:{service}"
        obs.cite(key, key)
        head = describe_workload(workload) if workload else f"{service}: no workload"
        return make_item(
            key=key,
            kind=EvidenceKind.POD_STATE,
            source=f"pods/{obs.scope.namespace}/{service}",
            summary=_pods_summary(service, symptoms, workload),
            service=service,
            detail="\n".join([head, *(describe_pod(p) for p in pods[:10])]),
            redactor=self.redactor,
            relevance=0.9 if anomalous else 0.5,
        )

    def _events(self, obs: Observations, handler: Handler) -> list[Item]:
        merged: dict[tuple[str, str, str], EventRecord] = {}
        for e in obs.events:
            k = (e.object_kind, e.object_name, e.reason)
            have = merged.get(k)
            if have is None or (e.last_seen and have.last_seen and e.last_seen > have.last_seen):
                merged[k] = e
        ordered = sorted(
            merged.values(),
            key=lambda e: (
                e.type != "Warning",
                -(e.last_seen.timestamp() if e.last_seen else 0.0),
            ),
        )
        out = []
        for i, e in enumerate(ordered[: handler.collect.events.keep]):
            service = self.service_of_object(obs, e.object_kind, e.object_name)
            key = f"event:{i}"
            if service:
                obs.cite(f"events:{service}", key)
            relevance = 0.75 if e.type == "Warning" else 0.2
            if e.reason in ("FailedScheduling", "FailedCreate", "BackOff", "Failed", "OOMKilling"):
                relevance = 0.85
            out.append(
                make_item(
                    key=key,
                    kind=EvidenceKind.EVENT,
                    source=f"events/{e.namespace}/{e.object_kind}/{e.object_name}",
                    summary=f"{e.type} {e.reason} on {e.object_kind}/{e.object_name}"
                    + (f" (x{e.count})" if e.count > 1 else "")
                    + f": {e.message}",
                    service=service,
                    detail=e.message,
                    redactor=self.redactor,
                    relevance=relevance,
                    at=e.last_seen,
                )
            )
        return out

    def _services(self, obs: Observations, handler: Handler) -> list[Item]:
        if not handler.collect.service_ports:
            return []
        out = []
        fine: list[str] = []
        for svc in sorted(obs.services.values(), key=lambda s: s.name):
            workload = obs.service_for_k8s_service(svc.name)
            problems = _service_problems(svc, obs.specs.get(workload or ""))
            line = _service_line(svc)
            if not problems:
                fine.append(line)
                continue
            out.append(self._service_item(obs, svc, workload, problems, line))
        if fine:
            out.append(
                make_item(
                    key="services:consistent",
                    kind=EvidenceKind.SERVICE,
                    source=f"services/{obs.scope.namespace}",
                    summary=f"{len(fine)} Services with endpoints and matching ports",
                    detail="\n".join(fine[:40]),
                    redactor=self.redactor,
                    relevance=0.1,
                )
            )
        return out

    def _service_item(
        self,
        obs: Observations,
        svc: ServiceSpec,
        workload: str | None,
        problems: list[str],
        line: str,
    ) -> Item:
        key = f"service:{svc.name}"
        obs.cite(f"service:{workload or svc.name}", key)
        return make_item(
            key=key,
            kind=EvidenceKind.SERVICE,
            source=f"services/{obs.scope.namespace}/{svc.name}",
            summary=f"Service {svc.name}: " + "; ".join(problems),
            service=workload or svc.name,
            detail=line,
            redactor=self.redactor,
            relevance=0.9,
        )

    def _nodes(self, obs: Observations, handler: Handler) -> list[Item]:
        if not handler.collect.nodes:
            return []
        obs.nodes = tuple(self.read_many(obs, "nodes", self.cluster.nodes)[:200])
        if not obs.nodes:
            return []
        not_ready = [n.name for n in obs.nodes if not n.ready]
        return [
            make_item(
                key="nodes",
                kind=EvidenceKind.NODE,
                source="nodes",
                summary=_nodes_summary(obs.nodes, not_ready),
                detail="\n".join(_node_line(n) for n in obs.nodes[:20]),
                redactor=self.redactor,
                relevance=0.8 if not_ready else 0.25,
            )
        ]

    def _quotas(self, obs: Observations, handler: Handler) -> list[Item]:
        if not handler.collect.quotas:
            return []
        ns = obs.scope.namespace
        obs.quotas = tuple(self.read_many(obs, "quotas", lambda: self.cluster.quotas(ns))[:20])
        out = []
        for q in obs.quotas:
            pairs = ", ".join(f"{k} {q.used.get(k, '?')}/{v}" for k, v in sorted(q.hard.items()))
            full = [k for k, v in q.hard.items() if q.used.get(k) == v]
            out.append(
                make_item(
                    key=f"quota:{q.name}",
                    kind=EvidenceKind.QUOTA,
                    source=f"resourcequotas/{ns}/{q.name}",
                    summary=f"ResourceQuota {q.name}: {pairs}"
                    + (f" (at the limit: {', '.join(full)})" if full else ""),
                    detail=pairs,
                    redactor=self.redactor,
                    relevance=0.7 if full else 0.3,
                )
            )
        return out

    def _network_policies(self, obs: Observations) -> list[Item]:
        """The namespace's NetworkPolicies: a caller timing out on a healthy callee may be
        one that no policy guarding the callee admits."""
        ns = obs.scope.namespace
        bodies = self.read_many(
            obs,
            "network policies",
            lambda: self.cluster.list_objects(
                api_version="networking.k8s.io/v1", kind="NetworkPolicy", namespace=ns
            ),
        )
        parsed = [p for b in bodies[:20] if (p := parse_network_policy(b.body)) is not None]
        obs.network_policies = tuple(parsed)
        return [
            make_item(
                key=f"netpol:{p.name}",
                kind=EvidenceKind.CONFIG,
                source=f"networkpolicies/{ns}/{p.name}",
                summary=p.describe(),
                detail=p.describe(),
                redactor=self.redactor,
                relevance=0.4,
            )
            for p in parsed
        ]


def _lacks_replicas(workload: WorkloadState | None) -> bool:
    return workload is not None and (
        workload.ready_replicas < workload.replicas or workload.replicas == 0
    )


def _pods_summary(service: str, symptoms: PodSymptoms, workload: WorkloadState | None) -> str:
    return (
        f"{service}: {short_reason(symptoms)}; {symptoms.ready}/"
        f"{symptoms.total} pods ready"
        + (f", desired {workload.replicas}" if workload else "")
        + (
            f", {symptoms.restarts} restart{'' if symptoms.restarts == 1 else 's'}"
            if symptoms.restarts
            else ""
        )
    )


def _service_problems(svc: ServiceSpec, spec: WorkloadSpec | None) -> list[str]:
    """What is wrong with a Service: a selector that reaches no workload, no ready endpoint,
    a targetPort no container of its workload exposes."""
    ports = spec.container_ports() if spec else set()
    problems = []
    if spec is None and svc.selector:
        problems.append(f"selector {dict(svc.selector)} matches no workload's pods")
    if svc.ready_endpoints == 0 and svc.selector:
        problems.append("no ready endpoints")
    for i, p in enumerate(svc.ports):
        target = p.target_port
        if spec is not None and ports and target not in ports:
            problems.append(
                f"spec.ports[{i}].targetPort {target} matches no containerPort "
                f"({', '.join(str(x) for x in sorted(ports, key=str))})"
            )
    return problems


def _service_line(svc: ServiceSpec) -> str:
    ports_text = ", ".join(f"{p.port}->{p.target_port}" for p in svc.ports)
    return (
        f"Service {svc.name}: ports {ports_text}; selector {dict(svc.selector)}; "
        f"{svc.ready_endpoints} ready endpoints"
    )


def _nodes_summary(nodes: Sequence[NodeInfo], not_ready: list[str]) -> str:
    bad = [n for n in nodes if not n.ready or n.unschedulable or n.taints]
    return (
        f"{len(nodes)} nodes, {len(not_ready)} not ready"
        + (f" ({', '.join(not_ready[:5])})" if not_ready else "")
        + (f", {len(bad)} cordoned/tainted/not ready" if bad else "")
    )


def _node_line(n: NodeInfo) -> str:
    return (
        f"{n.name}: {'Ready' if n.ready else 'NotReady'}"
        + (", cordoned" if n.unschedulable else "")
        + (f", taints {', '.join(n.taints)}" if n.taints else "")
        + f", labels {dict(sorted(n.labels.items()))}"
    )


class _PodOwners:
    """The service each pod belongs to: the first workload (in read order) whose selector it
    matches, else the first whose template labels it carries, else its owner reference or
    labels. One pass: a workload matches only pods carrying every pair of its selector, so an
    index of one pair per workload finds the candidates (the pairwise loop was pods x
    workloads per diagnosis)."""

    def __init__(self, obs: Observations) -> None:
        self._by_selector = _first_match_index(
            (name, w.selector) for name, w in obs.workloads.items()
        )
        self._by_template = _first_match_index(
            (name, spec.template_labels) for name, spec in obs.specs.items()
        )

    def service_of(self, pod: PodState) -> str:
        for index in (self._by_selector, self._by_template):
            found = _first_match(index, pod.labels)
            if found is not None:
                return found
        if pod.owner and "/" in pod.owner:
            owner = pod.owner.split("/", 1)[1]
            return owner.rsplit("-", 1)[0] if pod.owner.startswith("ReplicaSet/") else owner
        return pod.labels.get("app.kubernetes.io/name") or pod.labels.get("app") or pod.name


_Index = dict[tuple[str, str], list[tuple[int, str, Mapping[str, str]]]]


def _first_match_index(entries: Iterable[tuple[str, Mapping[str, str]]]) -> _Index:
    index: _Index = {}
    for position, (name, labels) in enumerate(entries):
        if labels:
            index.setdefault(min(labels.items()), []).append((position, name, labels))
    return index


def _first_match(index: _Index, labels: Mapping[str, str]) -> str | None:
    best: tuple[int, str] | None = None
    for pair in labels.items():
        for position, name, wanted in index.get(pair, ()):
            if (best is None or position < best[0]) and all(
                labels.get(k) == v for k, v in wanted.items()
            ):
                best = (position, name)
    return best[1] if best is not None else None


def _keep_relevant(
    obs: Observations, service: str, pods: list[PodState], limit: int
) -> tuple[PodState, ...]:
    """At most `limit` pods of one service, the not-ready ones first; what is dropped is said
    in the notes (healthy replicas are interchangeable, a failing one is the evidence)."""
    if len(pods) <= limit:
        return tuple(pods)
    kept = sorted(pods, key=lambda p: (p.ready and p.phase == "Running", p.name))[:limit]
    obs.notes.append(
        f"pods of {service}: {limit} of {len(pods)} kept (not-ready first), "
        f"{len(pods) - limit} ready ones dropped"
    )
    return tuple(sorted(kept, key=lambda p: p.name))


def service_spec(info: ServiceInfo) -> ServiceSpec:
    return ServiceSpec(
        name=info.name,
        selector=dict(info.selector),
        ports=tuple(replace(p, target_port=target_port(p.target_port)) for p in info.ports),
        cluster_ip=info.cluster_ip,
        ready_endpoints=info.ready_endpoints,
    )


def _lister(
    cluster: ClusterReader, api_version: str, kind: str, namespace: str
) -> Callable[[], Sequence[KubeObject]]:
    def read() -> Sequence[KubeObject]:
        return cluster.list_objects(api_version=api_version, kind=kind, namespace=namespace)

    return read
