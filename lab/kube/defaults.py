"""Defaulting: the fields the real API server fills in when a client leaves them out.

Clients read back what they wrote plus these defaults (`kubectl get -o yaml` shows them, the
transaction engine snapshots them, `kubectl apply` diffs against them), so they follow the
real ones: pod spec and container defaults, Deployment strategy and history limits, Service
types and target ports, namespace finalizers, Secret `stringData` folded into `data`.
Allocations (cluster IPs, node ports) come from `Allocators`, seeded for reproducibility.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Protocol

from agents.model import JsonObject


class Allocators(Protocol):
    def cluster_ip(self) -> str: ...

    def node_port(self) -> int: ...


def _image_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    if ":" not in last or last.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    http_get = probe.get("httpGet")
    if isinstance(http_get, dict):
        http_get.setdefault("path", "/")
        http_get.setdefault("scheme", "HTTP")


def _container(container: JsonObject) -> None:
    image = container.get("image")
    if isinstance(image, str) and image:
        container.setdefault("imagePullPolicy", _image_pull_policy(image))
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        _probe(container.get(probe))
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")


def pod_spec(spec: JsonObject) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        _container(container)
    for volume in spec.get("volumes") or []:
        for source in ("configMap", "secret"):
            if isinstance(volume.get(source), dict):
                volume[source].setdefault("defaultMode", 420)


#: Added by the DefaultTolerationSeconds admission plugin to every pod.
DEFAULT_TOLERATIONS = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)


def _qos_class(spec: JsonObject) -> str:
    containers = spec.get("containers") or []
    requests_any = limits_all = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if requests or limits:
            requests_any = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits.get(name)) != limits.get(name):
                guaranteed = False
        limits_all = limits_all or bool(limits)
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limits_all else "Burstable"


def pod(obj: JsonObject, _alloc: Allocators) -> None:
    spec = obj.setdefault("spec", {})
    pod_spec(spec)
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        # A limit without a request means request = limit (SetDefaults_Pod).
        resources = container["resources"]
        if resources.get("limits"):
            requests = resources.setdefault("requests", {})
            for name, limit in resources["limits"].items():
                requests.setdefault(name, limit)
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    tolerations = spec.setdefault("tolerations", [])
    for toleration in DEFAULT_TOLERATIONS:
        if not any(t.get("key") == toleration["key"] for t in tolerations):
            tolerations.append(dict(toleration))
    for toleration in tolerations:
        if toleration.get("key") is None and toleration.get("operator") is None:
            toleration["operator"] = "Exists"
    status = obj.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status["qosClass"] = _qos_class(spec)


def _template(workload: JsonObject) -> None:
    template = workload.setdefault("spec", {}).setdefault("template", {})
    pod_spec(template.setdefault("spec", {}))


def deployment(obj: JsonObject, _alloc: Allocators) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxSurge", "25%")
        rolling.setdefault("maxUnavailable", "25%")
    _template(obj)


def replica_set(obj: JsonObject, _alloc: Allocators) -> None:
    obj.setdefault("spec", {}).setdefault("replicas", 1)
    _template(obj)


def job(obj: JsonObject, _alloc: Allocators) -> None:
    """The Job strategy's defaults: a selector on the Job's own uid, and the labels that
    match it on the pod template (what the real server generates unless manualSelector)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    meta = obj["metadata"]
    if not spec.get("manualSelector"):
        uid = meta["uid"]
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        labels = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {})
        labels.update(
            {
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": meta["name"],
                "controller-uid": uid,
                "job-name": meta["name"],
            }
        )
    _template(obj)


def stateful_set(obj: JsonObject, _alloc: Allocators) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault(
        "persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"}
    )
    for claim in spec.get("volumeClaimTemplates") or []:
        claim_spec = claim.setdefault("spec", {})
        claim_spec.setdefault("volumeMode", "Filesystem")
        claim.setdefault("apiVersion", "v1")
        claim.setdefault("kind", "PersistentVolumeClaim")
    _template(obj)


def service(obj: JsonObject, alloc: Allocators) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
        if not spec.get("clusterIP"):
            spec["clusterIP"] = alloc.cluster_ip()
        if spec["clusterIP"] == "None":
            spec.setdefault("clusterIPs", ["None"])
        else:
            spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        if "port" in port:
            port.setdefault("targetPort", port["port"])
        if spec["type"] in ("NodePort", "LoadBalancer") and not port.get("nodePort"):
            port["nodePort"] = alloc.node_port()
    obj.setdefault("status", {}).setdefault("loadBalancer", {})


def namespace(obj: JsonObject, _alloc: Allocators) -> None:
    name = obj.get("metadata", {}).get("name", "")
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")


def secret(obj: JsonObject, _alloc: Allocators) -> None:
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None)
    if string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def persistent_volume_claim(obj: JsonObject, _alloc: Allocators) -> None:
    obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
    obj.setdefault("status", {}).setdefault("phase", "Pending")


def horizontal_pod_autoscaler(obj: JsonObject, _alloc: Allocators) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ]


def service_account(obj: JsonObject, _alloc: Allocators) -> None:
    del obj, _alloc


DEFAULTERS: dict[str, Callable[[JsonObject, Allocators], None]] = {
    "Pod": pod,
    "Deployment": deployment,
    "ReplicaSet": replica_set,
    "StatefulSet": stateful_set,
    "Job": job,
    "Service": service,
    "Namespace": namespace,
    "Secret": secret,
    "PersistentVolumeClaim": persistent_volume_claim,
    "HorizontalPodAutoscaler": horizontal_pod_autoscaler,
}


#: Status fields without `omitempty` in the Go types: always present, zero at first (the
#: official client requires some of them, e.g. ReplicaSet `status.replicas`).
ZERO_STATUS: dict[str, dict[str, int]] = {
    "ReplicaSet": {"replicas": 0},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "HorizontalPodAutoscaler": {"desiredReplicas": 0},
}


def zero_status(kind: str, obj: JsonObject) -> None:
    zeros = ZERO_STATUS.get(kind)
    if zeros:
        status = obj.setdefault("status", {})
        for key, value in zeros.items():
            status.setdefault(key, value)


def apply(kind: str, obj: JsonObject, alloc: Allocators) -> None:
    defaulter = DEFAULTERS.get(kind)
    if defaulter is not None:
        defaulter(obj, alloc)
    zero_status(kind, obj)
