"""Cells of server-side printing, kind by kind, as the real server's printers compute them
(the STATUS of a pod, READY of a deployment, PORT(S) of a service, LAST SEEN of an event).
Ages are measured in lab time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agents.model import JsonObject
from lab.kube.jsonutil import get_path, humanize_age, parse_time
from lab.kube.selectors import selector_string


def _age(obj: JsonObject, now: datetime) -> str:
    return _since(get_path(obj, "metadata", "creationTimestamp"), now)


def _since(text: str | None, now: datetime) -> str:
    moment = parse_time(text)
    if moment is None:
        return "<unknown>"
    return humanize_age((now - moment).total_seconds())


def _containers(obj: JsonObject) -> tuple[str, str]:
    spec = get_path(obj, "spec", "template", "spec", default={})
    containers = spec.get("containers") or []
    return (
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
    )


# --------------------------------------------------------------------------- pods


def pod_status(pod: JsonObject, now: datetime) -> tuple[str, int, int, str]:
    """(STATUS, ready containers, restarts, RESTARTS text) as kubectl prints them."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    reason = status.get("reason") or status.get("phase", "")
    restarts = 0
    last_restart: datetime | None = None

    def note_restart(cs: JsonObject) -> None:
        nonlocal last_restart
        finished = parse_time(get_path(cs, "lastState", "terminated", "finishedAt"))
        if finished is not None and (last_restart is None or finished > last_restart):
            last_restart = finished

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, cs in enumerate(init_statuses):
        restarts += int(cs.get("restartCount", 0))
        note_restart(cs)
        terminated = get_path(cs, "state", "terminated")
        waiting = get_path(cs, "state", "waiting")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if terminated is not None:
            reason = "Init:" + (
                terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}"
            )
        elif waiting is not None and waiting.get("reason") not in (None, "", "PodInitializing"):
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        initializing = True
        break
    ready = 0
    if not initializing:
        restarts = 0
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount", 0))
            note_restart(cs)
            waiting = get_path(cs, "state", "waiting")
            terminated = get_path(cs, "state", "terminated")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated is not None:
                reason = f"ExitCode:{terminated.get('exitCode', 0)}"
            elif cs.get("ready") and get_path(cs, "state", "running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            ready_condition = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or []
            )
            reason = "Running" if ready_condition else "NotReady"
    if get_path(pod, "metadata", "deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    text = str(restarts)
    if last_restart is not None:
        text = f"{restarts} ({humanize_age((now - last_restart).total_seconds())} ago)"
    return reason, ready, restarts, text


def pod_row(obj: JsonObject, now: datetime) -> list[Any]:
    reason, ready, _, restarts = pod_status(obj, now)
    total = len(get_path(obj, "spec", "containers", default=[]))
    return [
        obj["metadata"]["name"],
        f"{ready}/{total}",
        reason,
        restarts,
        _age(obj, now),
        get_path(obj, "status", "podIP", default="<none>"),
        get_path(obj, "spec", "nodeName", default="<none>"),
        get_path(obj, "status", "nominatedNodeName", default="<none>"),
        "<none>",
    ]


# --------------------------------------------------------------------------- workloads


def deployment_row(obj: JsonObject, now: datetime) -> list[Any]:
    status = obj.get("status") or {}
    names, images = _containers(obj)
    return [
        obj["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{get_path(obj, 'spec', 'replicas', default=0)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        _age(obj, now),
        names,
        images,
        selector_string(get_path(obj, "spec", "selector")) or "<none>",
    ]


def replica_set_row(obj: JsonObject, now: datetime) -> list[Any]:
    status = obj.get("status") or {}
    names, images = _containers(obj)
    return [
        obj["metadata"]["name"],
        get_path(obj, "spec", "replicas", default=0),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _age(obj, now),
        names,
        images,
        selector_string(get_path(obj, "spec", "selector")) or "<none>",
    ]


def stateful_set_row(obj: JsonObject, now: datetime) -> list[Any]:
    names, images = _containers(obj)
    return [
        obj["metadata"]["name"],
        f"{get_path(obj, 'status', 'readyReplicas', default=0)}/"
        f"{get_path(obj, 'spec', 'replicas', default=0)}",
        _age(obj, now),
        names,
        images,
    ]


def hpa_row(obj: JsonObject, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    ref = spec.get("scaleTargetRef") or {}
    targets = []
    for metric in spec.get("metrics") or []:
        resource = metric.get("resource") or {}
        target = resource.get("target") or {}
        if "averageUtilization" in target:
            targets.append(f"{resource.get('name', '')}: <unknown>/{target['averageUtilization']}%")
        else:
            targets.append("<unknown>")
    return [
        obj["metadata"]["name"],
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        ", ".join(targets) or "<none>",
        spec.get("minReplicas", 1),
        spec.get("maxReplicas", 0),
        get_path(obj, "status", "currentReplicas", default=0),
        _age(obj, now),
    ]


# --------------------------------------------------------------------------- networking


def service_row(obj: JsonObject, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    if kind == "LoadBalancer":
        ingress = get_path(obj, "status", "loadBalancer", "ingress", default=[])
        external = ",".join(i.get("ip") or i.get("hostname", "") for i in ingress) or "<pending>"
    elif kind == "ExternalName":
        external = spec.get("externalName", "<none>")
    else:
        external = ",".join(spec.get("externalIPs") or []) or "<none>"
    ports = []
    for port in spec.get("ports") or []:
        text = str(port.get("port", ""))
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        ports.append(f"{text}/{port.get('protocol', 'TCP')}")
    selector = spec.get("selector") or {}
    return [
        obj["metadata"]["name"],
        kind,
        spec.get("clusterIP") or "<none>",
        external,
        ",".join(ports) or "<none>",
        _age(obj, now),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


def endpoints_row(obj: JsonObject, now: datetime) -> list[Any]:
    addresses = []
    for subset in obj.get("subsets") or []:
        for address in subset.get("addresses") or []:
            for port in subset.get("ports") or [{}]:
                suffix = f":{port['port']}" if "port" in port else ""
                addresses.append(f"{address.get('ip', '')}{suffix}")
    text = ",".join(addresses[:3]) or "<none>"
    if len(addresses) > 3:
        text += f" + {len(addresses) - 3} more..."
    return [obj["metadata"]["name"], text, _age(obj, now)]


def endpoint_slice_row(obj: JsonObject, now: datetime) -> list[Any]:
    ports = ",".join(str(p.get("port", "")) for p in obj.get("ports") or []) or "<unset>"
    ips = [a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
    text = ",".join(ips[:3]) or "<unset>"
    if len(ips) > 3:
        text += f" + {len(ips) - 3} more..."
    return [obj["metadata"]["name"], obj.get("addressType", ""), ports, text, _age(obj, now)]


# --------------------------------------------------------------------------- config & core


def config_map_row(obj: JsonObject, now: datetime) -> list[Any]:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [obj["metadata"]["name"], count, _age(obj, now)]


def secret_row(obj: JsonObject, now: datetime) -> list[Any]:
    return [
        obj["metadata"]["name"],
        obj.get("type", ""),
        len(obj.get("data") or {}),
        _age(obj, now),
    ]


def namespace_row(obj: JsonObject, now: datetime) -> list[Any]:
    return [obj["metadata"]["name"], get_path(obj, "status", "phase", default=""), _age(obj, now)]


def node_row(obj: JsonObject, now: datetime) -> list[Any]:
    status = obj.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    text = "Unknown"
    if ready is not None:
        text = "Ready" if ready.get("status") == "True" else "NotReady"
    if get_path(obj, "spec", "unschedulable"):
        text += ",SchedulingDisabled"
    labels = get_path(obj, "metadata", "labels", default={})
    roles = sorted(
        k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k
    )
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        obj["metadata"]["name"],
        text,
        ",".join(roles) or "<none>",
        _age(obj, now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP", "<none>"),
        addresses.get("ExternalIP", "<none>"),
        info.get("osImage", ""),
        info.get("kernelVersion", ""),
        info.get("containerRuntimeVersion", ""),
    ]


def event_row(obj: JsonObject, now: datetime) -> list[Any]:
    last = (
        obj.get("lastTimestamp")
        or obj.get("eventTime")
        or get_path(obj, "metadata", "creationTimestamp")
    )
    first = obj.get("firstTimestamp") or last
    last_seen = _since(last, now)
    count = int(obj.get("count", 1) or 1)
    if count > 1:
        last_seen = f"{last_seen} (x{count} over {_since(first, now)})"
    involved = obj.get("involvedObject") or {}
    source = obj.get("source") or {}
    return [
        last_seen,
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        ", ".join(v for v in (source.get("component", ""), source.get("host", "")) if v),
        obj.get("message", "").strip(),
        _since(first, now),
        count,
        obj["metadata"]["name"],
    ]


def quota_row(obj: JsonObject, now: datetime) -> list[Any]:
    hard = get_path(obj, "status", "hard", default={}) or get_path(obj, "spec", "hard", default={})
    used = get_path(obj, "status", "used", default={})
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        text = f"{name}: {used.get(name, '0')}/{hard[name]}"
        (limits if name.startswith("limits.") else requests).append(text)
    return [obj["metadata"]["name"], _age(obj, now), ", ".join(requests), ", ".join(limits)]


_ACCESS = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}


def pvc_row(obj: JsonObject, now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        status.get("phase", ""),
        spec.get("volumeName", ""),
        (status.get("capacity") or {}).get("storage", ""),
        ",".join(_ACCESS.get(m, m) for m in status.get("accessModes") or []),
        spec.get("storageClassName", "<unset>"),
        "<unset>",
        _age(obj, now),
        spec.get("volumeMode", "Filesystem"),
    ]


def lease_row(obj: JsonObject, now: datetime) -> list[Any]:
    return [
        obj["metadata"]["name"],
        get_path(obj, "spec", "holderIdentity", default=""),
        _age(obj, now),
    ]


def service_account_row(obj: JsonObject, now: datetime) -> list[Any]:
    return [obj["metadata"]["name"], len(obj.get("secrets") or []), _age(obj, now)]


def default_row(obj: JsonObject, now: datetime) -> list[Any]:
    return [obj["metadata"]["name"], _age(obj, now)]


def pdb_row(obj: JsonObject, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    return [
        obj["metadata"]["name"],
        str(spec["minAvailable"]) if spec.get("minAvailable") is not None else "N/A",
        str(spec["maxUnavailable"]) if spec.get("maxUnavailable") is not None else "N/A",
        int(get_path(obj, "status", "disruptionsAllowed", default=0)),
        _age(obj, now),
    ]


def job_row(obj: JsonObject, now: datetime) -> list[Any]:
    status = obj.get("status") or {}
    conditions = {
        c.get("type"): c.get("status") for c in status.get("conditions") or [] if c.get("type")
    }
    if conditions.get("Failed") == "True":
        state = "Failed"
    elif conditions.get("Complete") == "True":
        state = "Complete"
    elif conditions.get("FailureTarget") == "True":
        state = "FailureTarget"
    elif get_path(obj, "spec", "suspend"):
        state = "Suspended"
    else:
        state = "Running"
    completions = get_path(obj, "spec", "completions")
    done = int(status.get("succeeded", 0))
    started = parse_time(status.get("startTime"))
    finished = parse_time(status.get("completionTime")) or now
    duration = "" if started is None else humanize_age((finished - started).total_seconds())
    names, images = _containers(obj)
    return [
        obj["metadata"]["name"],
        state,
        f"{done}/{completions}" if completions is not None else f"{done}/1 of 1",
        duration,
        _age(obj, now),
        names,
        images,
        selector_string(get_path(obj, "spec", "selector")),
    ]
