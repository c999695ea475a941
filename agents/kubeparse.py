"""Parse Kubernetes JSON (as the API server sends it) into the typed read snapshots of
`agents.model`. Parsed once, at the edge; everything downstream works on typed values.

Parsers are lenient about missing optional fields — a half-initialised pod is normal — and
never raise on a well-formed object.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from agents.model import (
    ConfigMapInfo,
    ContainerState,
    EventRecord,
    JsonObject,
    KubeObject,
    NodeInfo,
    PodState,
    QuotaInfo,
    RevisionInfo,
    ServiceInfo,
    ServicePort,
    WorkloadState,
)


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _map(value).items()}


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _container_state(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> ContainerState:
    status = status or {}
    state = _map(status.get("state"))
    last = _map(_map(status.get("lastState")).get("terminated"))
    kind, detail = "waiting", _map(state.get("waiting"))
    if "running" in state:
        kind, detail = "running", _map(state.get("running"))
    elif "terminated" in state:
        kind, detail = "terminated", _map(state.get("terminated"))
    return ContainerState(
        name=str(spec.get("name", status.get("name", ""))),
        image=str(status.get("image") or spec.get("image", "")),
        ready=bool(status.get("ready", False)),
        restart_count=int(status.get("restartCount", 0) or 0),
        state=kind,
        reason=detail.get("reason"),
        message=detail.get("message"),
        last_terminated_reason=last.get("reason"),
        last_exit_code=last.get("exitCode"),
    )


def parse_pod(body: JsonObject) -> PodState:
    meta, spec, status = (
        _map(body.get("metadata")),
        _map(body.get("spec")),
        _map(body.get("status")),
    )
    statuses = {str(s.get("name")): s for s in _list(status.get("containerStatuses"))}
    containers = tuple(
        _container_state(c, statuses.get(str(c.get("name")))) for c in _list(spec.get("containers"))
    )
    init_statuses = {str(s.get("name")): s for s in _list(status.get("initContainerStatuses"))}
    init_containers = tuple(
        _container_state(c, init_statuses.get(str(c.get("name"))))
        for c in _list(spec.get("initContainers"))
    )
    conditions = {str(c.get("type")): c for c in _list(status.get("conditions"))}
    scheduled = _map(conditions.get("PodScheduled"))
    ready = _map(conditions.get("Ready")).get("status") == "True"
    owner = next(
        (
            f"{o.get('kind')}/{o.get('name')}"
            for o in _list(meta.get("ownerReferences"))
            if isinstance(o, dict) and o.get("controller")
        ),
        None,
    )
    unschedulable = (
        str(scheduled.get("message", ""))
        if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable"
        else None
    )
    return PodState(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        phase=str(status.get("phase", "Unknown")),
        ready=ready,
        node=spec.get("nodeName"),
        labels=_str_map(meta.get("labels")),
        owner=owner,
        containers=containers,
        unschedulable_message=unschedulable,
        created_at=parse_time(meta.get("creationTimestamp")),
        init_containers=init_containers,
    )


def parse_workload(body: JsonObject) -> WorkloadState:
    meta, spec, status = (
        _map(body.get("metadata")),
        _map(body.get("spec")),
        _map(body.get("status")),
    )
    template_spec = _map(_map(spec.get("template")).get("spec"))
    revision = _map(meta.get("annotations")).get("deployment.kubernetes.io/revision")
    replicas = spec.get("replicas")
    return WorkloadState(
        kind=str(body.get("kind", "")),
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        replicas=1 if replicas is None else int(replicas),
        ready_replicas=int(status.get("readyReplicas", 0) or 0),
        available_replicas=int(status.get("availableReplicas", 0) or 0),
        updated_replicas=int(status.get("updatedReplicas", 0) or 0),
        generation=int(meta.get("generation", 0) or 0),
        observed_generation=int(status.get("observedGeneration", 0) or 0),
        selector=_str_map(_map(spec.get("selector")).get("matchLabels")),
        images={
            str(c.get("name")): str(c.get("image")) for c in _list(template_spec.get("containers"))
        },
        revision=int(revision) if revision and str(revision).isdigit() else None,
        conditions={
            str(c.get("type")): str(c.get("status")) for c in _list(status.get("conditions"))
        },
        current_replicas=int(status.get("replicas", 0) or 0),
    )


def parse_event(body: JsonObject) -> EventRecord:
    meta, involved = _map(body.get("metadata")), _map(body.get("involvedObject"))
    last = body.get("lastTimestamp") or body.get("eventTime") or meta.get("creationTimestamp")
    return EventRecord(
        namespace=str(meta.get("namespace", "")),
        object_kind=str(involved.get("kind", "")),
        object_name=str(involved.get("name", "")),
        reason=str(body.get("reason", "")),
        message=str(body.get("message", "")),
        type=str(body.get("type", "Normal")),
        count=int(body.get("count", 1) or 1),
        last_seen=parse_time(last),
    )


def parse_service(body: JsonObject, ready_endpoints: int) -> ServiceInfo:
    meta, spec = _map(body.get("metadata")), _map(body.get("spec"))
    ports = tuple(
        ServicePort(
            port=int(p.get("port", 0)),
            target_port=_port(p.get("targetPort", p.get("port", 0))),
            protocol=str(p.get("protocol", "TCP")),
            name=p.get("name"),
        )
        for p in _list(spec.get("ports"))
        if isinstance(p, dict)
    )
    return ServiceInfo(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        selector=_str_map(spec.get("selector")),
        ports=ports,
        ready_endpoints=ready_endpoints,
        cluster_ip=str(ip) if (ip := spec.get("clusterIP")) and ip != "None" else None,
    )


def _port(value: Any) -> int | str:
    if isinstance(value, int | str):
        return value
    return 0


def ready_endpoint_count(endpoints: JsonObject | None) -> int:
    if not endpoints:
        return 0
    return sum(len(_list(s.get("addresses"))) for s in _list(endpoints.get("subsets")))


def parse_config_map(body: JsonObject) -> ConfigMapInfo:
    meta = _map(body.get("metadata"))
    return ConfigMapInfo(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        data=_str_map(body.get("data")),
    )


_UNITS = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "k": 1000,
    "M": 1000**2,
    "G": 1000**3,
    "T": 1000**4,
}


def quantity_bytes(text: Any) -> int:
    """A memory quantity ("512Mi", "1G", "1048576") in bytes; 0 when unparseable."""
    value = str(text or "").strip()
    for suffix, factor in sorted(_UNITS.items(), key=lambda kv: -len(kv[0])):
        if value.endswith(suffix):
            try:
                return int(float(value[: -len(suffix)]) * factor)
            except ValueError:
                return 0
    try:
        return int(float(value))
    except ValueError:
        return 0


def quantity_millis(text: Any) -> int:
    """A CPU quantity ("250m", "2", "0.5") in millicores; 0 when unparseable."""
    value = str(text or "").strip()
    try:
        if value.endswith("m"):
            return int(float(value[:-1]))
        return int(float(value) * 1000)
    except ValueError:
        return 0


def parse_node(body: JsonObject) -> NodeInfo:
    meta, spec, status = (
        _map(body.get("metadata")),
        _map(body.get("spec")),
        _map(body.get("status")),
    )
    conditions = {str(c.get("type")): c for c in _list(status.get("conditions"))}
    allocatable = _map(status.get("allocatable"))
    taints = tuple(
        f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}"
        for t in _list(spec.get("taints"))
        if isinstance(t, dict)
    )
    return NodeInfo(
        name=str(meta.get("name", "")),
        ready=_map(conditions.get("Ready")).get("status") == "True",
        unschedulable=bool(spec.get("unschedulable", False)),
        labels=_str_map(meta.get("labels")),
        taints=taints,
        allocatable_cpu_millis=quantity_millis(allocatable.get("cpu")),
        allocatable_memory_bytes=quantity_bytes(allocatable.get("memory")),
    )


def parse_quota(body: JsonObject) -> QuotaInfo:
    meta, status = _map(body.get("metadata")), _map(body.get("status"))
    hard = _str_map(status.get("hard")) or _str_map(_map(body.get("spec")).get("hard"))
    return QuotaInfo(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        hard=hard,
        used=_str_map(status.get("used")),
    )


def parse_revisions(deployment: KubeObject, replica_sets: list[KubeObject]) -> list[RevisionInfo]:
    """A Deployment's rollout history from the ReplicaSets it controls, oldest first."""
    uid = deployment.metadata.get("uid")
    revisions: list[RevisionInfo] = []
    for rs in replica_sets:
        owners = _list(rs.metadata.get("ownerReferences"))
        if not any(isinstance(o, dict) and o.get("uid") == uid for o in owners):
            continue
        number = _map(rs.metadata.get("annotations")).get("deployment.kubernetes.io/revision")
        if not (number and str(number).isdigit()):
            continue
        template_spec = _map(_map(_map(rs.body.get("spec")).get("template")).get("spec"))
        revisions.append(
            RevisionInfo(
                revision=int(number),
                images={
                    str(c.get("name")): str(c.get("image"))
                    for c in _list(template_spec.get("containers"))
                },
                replica_set=rs.name,
                created_at=parse_time(rs.metadata.get("creationTimestamp")),
                pod_spec=pod_spec_digest(template_spec),
            )
        )
    return sorted(revisions, key=lambda r: r.revision)


def pod_spec_digest(spec: Mapping[str, Any]) -> str:
    """A digest of a pod template's spec, equal for equal specs whatever their key order."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def newest_events(events: Iterable[EventRecord], limit: int) -> list[EventRecord]:
    """The `limit` newest of `events` (by last seen), newest first. The server has no order
    by time, so the newest are found only after reading them all."""
    return heapq.nlargest(
        limit, events, key=lambda e: (e.last_seen is not None, e.last_seen or _EPOCH)
    )
