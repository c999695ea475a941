"""What a fresh cluster already holds: system namespaces, Ready nodes, and the `kubernetes`
Service in `default`, as a kubeadm cluster would show them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.errors import AlreadyExists
from lab.kube.ids import Ids
from lab.kube.jsonutil import rfc3339
from lab.kube.resources import by_kind

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
MANAGER = "kube-apiserver"
ZONES = ("a", "b", "c")


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSpec:
    name: str
    cpu: str = "8"
    memory: str = "32Gi"
    pods: str = "110"
    zone: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[JsonObject, ...] = ()


def default_nodes(count: int) -> list[NodeSpec]:
    return [
        NodeSpec(name=f"lab-node-{i + 1}", zone=f"lab-zone-{ZONES[i % len(ZONES)]}")
        for i in range(count)
    ]


def node_object(spec: NodeSpec, index: int, ids: Ids, now: str) -> JsonObject:
    capacity = {
        "cpu": spec.cpu,
        "memory": spec.memory,
        "pods": spec.pods,
        "ephemeral-storage": "100Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "lab.standard",
        "topology.kubernetes.io/region": "lab",
        "topology.kubernetes.io/zone": spec.zone or "lab-zone-a",
        **spec.labels,
    }

    def cond(kind: str, status: str, reason: str, message: str) -> JsonObject:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    node: JsonObject = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                cond(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                cond(
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                ),
                cond(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                ),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.0.{index + 10}"},
                {"type": "Hostname", "address": spec.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": ids.hex(32),
                "systemUUID": ids.uid(),
                "bootID": ids.uid(),
                "kernelVersion": "6.1.0-28-amd64",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": "v1.32.0",
                "kubeProxyVersion": "v1.32.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }
    if spec.taints:
        node["spec"]["taints"] = [dict(t) for t in spec.taints]
    return node


def bootstrap(api: KubeApi, ids: Ids, nodes: list[NodeSpec], server_ip: str = "10.0.0.2") -> None:
    now = rfc3339(api.clock.now())
    namespace_rt, node_rt = by_kind("Namespace"), by_kind("Node")
    service_rt, endpoints_rt = by_kind("Service"), by_kind("Endpoints")
    assert namespace_rt and node_rt and service_rt and endpoints_rt
    for name in SYSTEM_NAMESPACES:
        with contextlib.suppress(AlreadyExists):
            api.create_object(namespace_rt, "", {"metadata": {"name": name}}, manager=MANAGER)
    for index, spec in enumerate(nodes):
        api.create_object(
            node_rt, "", node_object(spec, index, ids, now), manager="kubelet", internal=True
        )
    ids.reserve_ip("10.96.0.1")
    api.create_object(
        service_rt,
        "default",
        {
            "metadata": {
                "name": "kubernetes",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "clusterIP": "10.96.0.1",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
            },
        },
        manager=MANAGER,
        internal=True,
    )
    api.create_object(
        endpoints_rt,
        "default",
        {
            "metadata": {
                "name": "kubernetes",
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
            },
            "subsets": [
                {
                    "addresses": [{"ip": server_ip}],
                    "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
                }
            ],
        },
        manager=MANAGER,
        internal=True,
    )
