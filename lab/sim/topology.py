"""One tick's view of a namespace's networking: Services, their ready Endpoints, and Pods.

Built fresh from the cluster's objects each tick, because that is what kube-proxy and DNS do:
a caller reaches whatever the Endpoints object lists *now*, on the port it lists, whether or
not anything listens there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from agents.model import JsonObject
from lab.kube.runtime import ClusterView
from lab.sim import clusterdns
from lab.sim.netpolicy import IngressPolicies

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class SvcPort:
    name: str | None
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Svc:
    name: str
    cluster_ip: str
    ports: tuple[SvcPort, ...]

    def port(self, number: int) -> SvcPort | None:
        for p in self.ports:
            if p.port == number:
                return p
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    ip: str
    port: int
    pod: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PodInfo:
    name: str
    uid: str
    ip: str
    node: str | None
    running: frozenset[str]  # containers whose status says running
    body: JsonObject


class Topology:
    """The networking facts of one namespace at one instant."""

    def __init__(self, namespace: str, view: ClusterView, node_ready: dict[str, bool]) -> None:
        self.namespace = namespace
        self.node_ready = node_ready
        self.services: dict[str, Svc] = {}
        for svc in view.list("Service", namespace):
            spec = svc.get("spec") or {}
            name = str(svc["metadata"]["name"])
            self.services[name] = Svc(
                name=name,
                cluster_ip=str(spec.get("clusterIP") or "10.96.0.1"),
                ports=tuple(
                    SvcPort(name=p.get("name"), port=int(p.get("port", 0)))
                    for p in spec.get("ports") or []
                ),
            )
        self._endpoints: dict[str, list[JsonObject]] = {
            str(ep["metadata"]["name"]): list(ep.get("subsets") or [])
            for ep in view.list("Endpoints", namespace)
        }
        self.pods: dict[str, PodInfo] = {}
        self.pods_by_ip: dict[str, PodInfo] = {}
        for pod in view.list("Pod", namespace):
            info = _pod_info(pod)
            self.pods[info.name] = info
            if info.ip:
                self.pods_by_ip[info.ip] = info
        self.policies = IngressPolicies(namespace, view)
        self.dns_ok = clusterdns.serving(view)

    def ready_endpoints(self, service: str, port: SvcPort) -> list[Endpoint]:
        """Ready addresses for one Service port, as kube-proxy would program them."""
        out: list[Endpoint] = []
        for subset in self._endpoints.get(service, []):
            ports = subset.get("ports") or []
            match = [p for p in ports if p.get("name") == port.name]
            if not match and len(ports) == 1 and not ports[0].get("name"):
                match = ports
            if not match:
                continue
            number = int(match[0].get("port", 0))
            for address in subset.get("addresses") or []:
                ref = address.get("targetRef") or {}
                out.append(
                    Endpoint(
                        ip=str(address.get("ip", "")),
                        port=number,
                        pod=str(ref["name"]) if ref.get("name") else None,
                    )
                )
        return out

    def pod_for(self, endpoint: Endpoint) -> PodInfo | None:
        if endpoint.pod is not None and endpoint.pod in self.pods:
            return self.pods[endpoint.pod]
        return self.pods_by_ip.get(endpoint.ip)


def _pod_info(pod: JsonObject) -> PodInfo:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    running = frozenset(
        str(cs.get("name"))
        for cs in status.get("containerStatuses") or []
        if "running" in (cs.get("state") or {})
    )
    return PodInfo(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", meta.get("name", ""))),
        ip=str(status.get("podIP") or ""),
        node=(pod.get("spec") or {}).get("nodeName"),
        running=running,
        body=pod,
    )


def node_readiness(view: ClusterView) -> dict[str, bool]:
    ready: dict[str, bool] = {}
    for node in view.list("Node"):
        conditions = (node.get("status") or {}).get("conditions") or []
        ready[str(node["metadata"]["name"])] = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
        )
    return ready
