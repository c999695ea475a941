"""Observations: what the collector read, in typed form, for the offline reasoner.

Evidence (`agents.model.Evidence`) is text for people and models. The offline reasoner needs
the same facts as values — container ports, env references, desired replicas, the diff of an
object against its last known good — so the collector keeps both: the observations below,
and evidence items whose keys the reasoner cites. Values taken from objects are redacted
here, at parse time, so nothing downstream ever holds a secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents.diagnosis.netpolicy import NetworkPolicyInfo
from agents.diagnosis.ports import Redactor
from agents.kubeparse import quantity_bytes, quantity_millis
from agents.model import (
    Change,
    ConfigMapInfo,
    EventRecord,
    GoldenSignals,
    JsonObject,
    NodeInfo,
    PodState,
    QuotaInfo,
    Scope,
    ServicePort,
    WorkloadState,
)
from agents.redact import redact_entry as redact_value


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvVar:
    name: str
    value: str | None = None  # literal value (redacted); None when it comes from a reference
    config_map: str | None = None  # configMapKeyRef name
    key: str | None = None  # configMapKeyRef key
    secret: bool = False  # from a Secret: never resolved


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerSpec:
    index: int
    name: str
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    ports: tuple[tuple[int, str | None], ...] = ()  # (containerPort, name)
    env: tuple[EnvVar, ...] = ()
    env_from_config_maps: tuple[str, ...] = ()
    cpu_limit_millis: int | None = None
    memory_limit_bytes: int | None = None
    cpu_request_millis: int | None = None
    memory_request_bytes: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadSpec:
    """The pod template of a Deployment or StatefulSet, as far as diagnosis cares."""

    kind: str
    name: str
    namespace: str
    replicas: int
    template_labels: Mapping[str, str]
    containers: tuple[ContainerSpec, ...]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    has_affinity: bool = False
    tolerations: tuple[str, ...] = ()
    volume_config_maps: tuple[str, ...] = ()

    def container_ports(self) -> set[int | str]:
        out: set[int | str] = set()
        for c in self.containers:
            for number, name in c.ports:
                out.add(number)
                if name:
                    out.add(name)
        return out

    def config_maps(self) -> set[str]:
        names = set(self.volume_config_maps)
        for c in self.containers:
            names.update(c.env_from_config_maps)
            names.update(e.config_map for e in c.env if e.config_map)
        return names


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceSpec:
    name: str
    selector: Mapping[str, str]
    ports: tuple[ServicePort, ...]
    cluster_ip: str | None
    ready_endpoints: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LogTail:
    service: str
    pod: str
    container: str
    previous: bool
    lines: tuple[str, ...]
    key: str  # the evidence key of this tail
    older: int = 0  # lines dropped as written before the incident's log window


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldDiff:
    """One field of an object that differs from its last known good (values redacted)."""

    kind: str
    name: str
    path: str
    old: str | None
    new: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PodDrift:
    """One container field of a controller-owned pod that is not what its owner's template
    says (`agents.diagnosis.podspec`): the pod was changed outside its controller."""

    pod: str
    owner: str  # "ReplicaSet/geo-5658f4db45"
    container: str
    index: int  # of the container in the pod's spec
    field: str  # image | command | args
    pod_value: str
    template_value: str

    @property
    def path(self) -> str:
        return f"spec.containers[{self.index}].{self.field}"


@dataclass(slots=True, kw_only=True)
class Observations:
    """Everything one collection read. Mutable while the collector fills it, then handed to
    the reasoner and not changed again."""

    scope: Scope
    now: datetime
    started_at: datetime  # the incident's start: changes before it are candidates
    alerting: tuple[str, ...] = ()  # services the alerts point at
    workloads: dict[str, WorkloadState] = field(default_factory=dict)
    specs: dict[str, WorkloadSpec] = field(default_factory=dict)
    pods: dict[str, tuple[PodState, ...]] = field(default_factory=dict)  # by service
    services: dict[str, ServiceSpec] = field(default_factory=dict)  # by Service name
    config_maps: dict[str, ConfigMapInfo] = field(default_factory=dict)
    events: tuple[EventRecord, ...] = ()
    logs: dict[str, list[LogTail]] = field(default_factory=dict)  # by service
    signals: dict[str, GoldenSignals] = field(default_factory=dict)
    cpu_ratio: dict[str, float] = field(default_factory=dict)  # by service, max over pods
    edges: set[tuple[str, str]] = field(default_factory=set)  # (caller, callee)
    edge_sources: dict[tuple[str, str], str] = field(default_factory=dict)
    changes: list[tuple[str, Change]] = field(default_factory=list)  # (evidence key, change)
    drift: list[tuple[str, FieldDiff]] = field(default_factory=list)  # (evidence key, diff)
    pod_drift: dict[str, list[PodDrift]] = field(default_factory=dict)  # by service
    nodes: tuple[NodeInfo, ...] = ()
    quotas: tuple[QuotaInfo, ...] = ()
    network_policies: tuple[NetworkPolicyInfo, ...] = ()
    gaps: list[str] = field(default_factory=list)  # reads that failed, for the summary
    #: Core reads (inventory, golden signals) that failed because a source did not answer:
    #: the diagnosis would be blind (`SourcesUnavailable`).
    unavailable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what a cap dropped, for the summary
    keys: dict[str, list[str]] = field(default_factory=dict)  # "pods:<svc>" → evidence keys
    pod_services: dict[str, str] = field(default_factory=dict)  # pod name → service
    #: Services by one pair of their selector, built on first use (see `k8s_services_for`);
    #: rebuilt when `services` has grown since, as it does while the collector fills it.
    _selector_index: tuple[int, dict[tuple[str, str], list[ServiceSpec]]] | None = None

    def cite(self, group: str, key: str) -> None:
        self.keys.setdefault(group, []).append(key)

    def cited(self, group: str) -> list[str]:
        return list(self.keys.get(group, ()))

    @property
    def service_names(self) -> set[str]:
        return set(self.workloads) | set(self.services)

    def callees(self, service: str) -> set[str]:
        return {b for a, b in self.edges if a == service}

    def callers(self, service: str) -> set[str]:
        return {a for a, b in self.edges if b == service}

    def service_for_k8s_service(self, name: str) -> str | None:
        """The workload a Service fronts (same name first, then selector match)."""
        if name in self.specs:
            return name
        svc = self.services.get(name)
        if svc is None or not svc.selector:
            return None
        for wl, spec in self.specs.items():
            if all(spec.template_labels.get(k) == v for k, v in svc.selector.items()):
                return wl
        return None

    def k8s_services_for(self, workload: str) -> list[ServiceSpec]:
        """The Services named like `workload` or selecting its pods, in `services` order.

        A Service selects the workload only if the template has every pair of its selector,
        so one pair per Service (the smallest) indexes all candidates: each call looks at the
        Services sharing a label pair with the template, not at every Service (the pairwise
        scan was services x workloads per diagnosis: 188k checks in a 2,000-pod namespace)."""
        spec = self.specs.get(workload)
        chosen: dict[str, ServiceSpec] = {}
        same = self.services.get(workload)
        if same is not None:
            chosen[same.name] = same
        if spec is not None:
            index = self._services_by_pair()
            for pair in spec.template_labels.items():
                for svc in index.get(pair, ()):
                    if all(spec.template_labels.get(k) == v for k, v in svc.selector.items()):
                        chosen[svc.name] = svc
        order = {name: i for i, name in enumerate(self.services)} if len(chosen) > 1 else {}
        return sorted(chosen.values(), key=lambda s: order.get(s.name, 0))

    def _services_by_pair(self) -> dict[tuple[str, str], list[ServiceSpec]]:
        if self._selector_index is None or self._selector_index[0] != len(self.services):
            index: dict[tuple[str, str], list[ServiceSpec]] = {}
            for svc in self.services.values():
                if svc.selector:
                    index.setdefault(min(svc.selector.items()), []).append(svc)
            self._selector_index = (len(self.services), index)
        return self._selector_index[1]


# ------------------------------------------------------------------------------- parsing


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _env(item: JsonObject, redactor: Redactor) -> EnvVar:
    name = str(item.get("name", ""))
    source = _map(item.get("valueFrom"))
    if "value" in item:
        return EnvVar(name=name, value=redact_value(name, str(item.get("value", "")), redactor))
    cm = _map(source.get("configMapKeyRef"))
    if cm:
        return EnvVar(name=name, config_map=str(cm.get("name", "")), key=str(cm.get("key", "")))
    return EnvVar(name=name, secret="secretKeyRef" in source)


def _container(index: int, body: JsonObject, redactor: Redactor) -> ContainerSpec:
    resources = _map(body.get("resources"))
    limits, requests = _map(resources.get("limits")), _map(resources.get("requests"))
    return ContainerSpec(
        index=index,
        name=str(body.get("name", "")),
        image=str(body.get("image", "")),
        command=tuple(redactor(str(c)) for c in _list(body.get("command"))),
        args=tuple(redactor(str(a)) for a in _list(body.get("args"))),
        ports=tuple(
            (int(p.get("containerPort", 0) or 0), p.get("name"))
            for p in _list(body.get("ports"))
            if isinstance(p, dict)
        ),
        env=tuple(_env(e, redactor) for e in _list(body.get("env")) if isinstance(e, dict)),
        env_from_config_maps=tuple(
            str(_map(e.get("configMapRef")).get("name"))
            for e in _list(body.get("envFrom"))
            if isinstance(e, dict) and _map(e.get("configMapRef")).get("name")
        ),
        cpu_limit_millis=quantity_millis(limits["cpu"]) if "cpu" in limits else None,
        memory_limit_bytes=quantity_bytes(limits["memory"]) if "memory" in limits else None,
        cpu_request_millis=quantity_millis(requests["cpu"]) if "cpu" in requests else None,
        memory_request_bytes=(quantity_bytes(requests["memory"]) if "memory" in requests else None),
    )


def parse_containers(pod_spec: JsonObject, redactor: Redactor) -> tuple[ContainerSpec, ...]:
    """The containers of a pod spec (a Pod's `spec`, or a template's `spec`)."""
    return tuple(
        _container(i, c, redactor)
        for i, c in enumerate(_list(pod_spec.get("containers")))
        if isinstance(c, dict)
    )


def parse_workload_spec(body: JsonObject, redactor: Redactor) -> WorkloadSpec:
    meta, spec = _map(body.get("metadata")), _map(body.get("spec"))
    template = _map(spec.get("template"))
    pod_spec = _map(template.get("spec"))
    replicas = spec.get("replicas")
    return WorkloadSpec(
        kind=str(body.get("kind", "Deployment")),
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        replicas=1 if replicas is None else int(replicas),
        template_labels={
            str(k): str(v) for k, v in _map(_map(template.get("metadata")).get("labels")).items()
        },
        containers=parse_containers(pod_spec, redactor),
        node_selector={str(k): str(v) for k, v in _map(pod_spec.get("nodeSelector")).items()},
        has_affinity=bool(pod_spec.get("affinity")),
        tolerations=tuple(
            f"{t.get('key', '')}={t.get('value', '')}:{t.get('effect', '')}"
            for t in _list(pod_spec.get("tolerations"))
            if isinstance(t, dict)
        ),
        volume_config_maps=tuple(
            str(_map(v.get("configMap")).get("name"))
            for v in _list(pod_spec.get("volumes"))
            if isinstance(v, dict) and _map(v.get("configMap")).get("name")
        ),
    )


def parse_service_spec(body: JsonObject, ready_endpoints: int) -> ServiceSpec:
    meta, spec = _map(body.get("metadata")), _map(body.get("spec"))
    ports = tuple(
        ServicePort(
            port=int(p.get("port", 0) or 0),
            target_port=target_port(p.get("targetPort", p.get("port", 0))),
            protocol=str(p.get("protocol", "TCP")),
            name=p.get("name"),
        )
        for p in _list(spec.get("ports"))
        if isinstance(p, dict)
    )
    ip = spec.get("clusterIP")
    return ServiceSpec(
        name=str(meta.get("name", "")),
        selector={str(k): str(v) for k, v in _map(spec.get("selector")).items()},
        ports=ports,
        cluster_ip=str(ip) if ip and ip != "None" else None,
        ready_endpoints=ready_endpoints,
    )


def target_port(value: Any) -> int | str:
    """A targetPort as the pod spec would say it: a number (even when sent as "8080") or a
    port name."""
    if isinstance(value, int):
        return value
    text = str(value or "")
    return int(text) if text.isdigit() else text
