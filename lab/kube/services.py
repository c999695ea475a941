"""Cluster IP and node port allocation for Services, with the real server's refusals.

Allocation happens during defaulting; a request that then fails (validation, a dry run) gives
its addresses back, and an explicit `clusterIP` already held by another Service is a 422, as
on the real server.
"""

from __future__ import annotations

from agents.model import JsonObject
from lab.kube.errors import field_error, invalid
from lab.kube.ids import Ids
from lab.kube.resources import ResourceType
from lab.kube.store import Store


class ServiceAllocations:
    """The allocations of one request, released if it does not commit."""

    def __init__(self, ids: Ids, store: Store) -> None:
        self._ids = ids
        self._store = store
        self._ips: list[str] = []
        self._ports: list[int] = []

    def cluster_ip(self) -> str:
        ip = self._ids.cluster_ip()
        self._ips.append(ip)
        return ip

    def node_port(self) -> int:
        port = self._ids.node_port()
        self._ports.append(port)
        return port

    def check(self, rt: ResourceType, obj: JsonObject) -> None:
        """Refuse an explicit cluster IP that another Service holds; reserve it otherwise."""
        if rt.kind != "Service":
            return
        ip = (obj.get("spec") or {}).get("clusterIP", "")
        if not ip or ip == "None" or ip in self._ips:
            return
        for other in self._store.iter_objects("Service"):
            if (other.get("spec") or {}).get("clusterIP") == ip:
                cause = field_error(
                    "FieldValueInvalid",
                    "spec.clusterIPs",
                    f'Invalid value: []string{{"{ip}"}}: failed to allocate IP {ip}: provided IP '
                    "is already allocated",
                )
                raise invalid("Service", "", obj["metadata"].get("name", ""), [cause])
        self._ids.reserve_ip(ip)
        self._ips.append(ip)

    def release(self) -> None:
        for ip in self._ips:
            self._ids.release_ip(ip)
        for port in self._ports:
            self._ids.release_port(port)
        self._ips.clear()
        self._ports.clear()


def release_service(ids: Ids, service: JsonObject) -> None:
    """Give back a deleted Service's addresses."""
    spec = service.get("spec") or {}
    if spec.get("clusterIP") and spec["clusterIP"] != "None":
        ids.release_ip(spec["clusterIP"])
    for port in spec.get("ports") or []:
        if port.get("nodePort"):
            ids.release_port(port["nodePort"])
