"""NetworkPolicy ingress as a CNI enforces it: which connections reach a pod.

The semantics are the API's (networking.k8s.io/v1): a pod no Ingress policy selects accepts
everything; once one selects it, it accepts only what some rule of some selecting policy
allows (the policies are additive). A rule with no `from` allows every source, with no `ports`
every port; a peer with only `podSelector` means pods of the policy's own namespace, with
`namespaceSelector` pods of the namespaces it selects (both: pods matching both), `ipBlock` a
CIDR minus its exceptions. A policy with no ingress rules that lists Ingress in its types
(or has no types and so defaults to Ingress) denies all ingress to the pods it selects.
A denied connection is dropped, not refused: the caller's dial times out.

Egress rules are not enforced: the apps' faults only need the callee's side, and a lab
policy with egress rules is still stored and shown like any other object.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.model import JsonObject
from lab.kube.runtime import ClusterView
from lab.kube.selectors import LabelSelector, from_label_selector

#: The label the API server puts on every namespace (since 1.21): policies select by it.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """Who opens a connection: a pod (namespace, labels, IP), or a client outside the cluster
    (no namespace or labels; only an ipBlock can admit it)."""

    namespace: str | None
    labels: Mapping[str, str]
    ip: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _Peer:
    pods: LabelSelector | None
    namespaces: LabelSelector | None
    cidr: str | None
    excepted: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rule:
    peers: tuple[_Peer, ...] | None  # None: every source
    ports: tuple[tuple[str, int | str | None, int | None], ...] | None  # None: every port


@dataclass(frozen=True, slots=True, kw_only=True)
class _Policy:
    name: str
    namespace: str
    selects: LabelSelector
    rules: tuple[_Rule, ...]


class IngressPolicies:
    """The Ingress policies of one namespace at one instant, and the namespaces' labels."""

    def __init__(self, namespace: str, view: ClusterView) -> None:
        self.namespace = namespace
        self._view = view
        self._ns_labels: dict[str, dict[str, str]] = {}
        self.policies = tuple(
            p
            for obj in view.list("NetworkPolicy", namespace)
            if (p := _parse(obj, namespace)) is not None
        )

    def __bool__(self) -> bool:
        return bool(self.policies)

    def admits(self, source: Source, dest: JsonObject, port: int, protocol: str = "TCP") -> bool:
        """Does a connection from `source` to pod `dest` on `port` get through?"""
        labels = ((dest.get("metadata") or {}).get("labels")) or {}
        selecting = [p for p in self.policies if p.selects.matches(labels)]
        if not selecting:
            return True
        return any(
            self._rule_admits(rule, policy, source=source, dest=dest, port=port, protocol=protocol)
            for policy in selecting
            for rule in policy.rules
        )

    def _rule_admits(
        self,
        rule: _Rule,
        policy: _Policy,
        *,
        source: Source,
        dest: JsonObject,
        port: int,
        protocol: str,
    ) -> bool:
        if rule.ports is not None and not any(
            _port_matches(p, dest, port, protocol) for p in rule.ports
        ):
            return False
        if rule.peers is None:
            return True
        return any(self._peer_admits(peer, policy, source) for peer in rule.peers)

    def _peer_admits(self, peer: _Peer, policy: _Policy, source: Source) -> bool:
        if peer.cidr is not None:
            return _in_block(source.ip, peer.cidr, peer.excepted)
        if source.namespace is None:
            return False  # a client outside the cluster is no pod of any namespace
        if peer.namespaces is not None:
            if not peer.namespaces.matches(self._labels_of(source.namespace)):
                return False
        elif source.namespace != policy.namespace:
            return False
        return peer.pods is None or peer.pods.matches(source.labels)

    def _labels_of(self, namespace: str) -> dict[str, str]:
        if namespace not in self._ns_labels:
            obj = self._view.get("Namespace", None, namespace)
            labels = dict(((obj or {}).get("metadata") or {}).get("labels") or {})
            labels.setdefault(NAMESPACE_NAME_LABEL, namespace)
            self._ns_labels[namespace] = labels
        return self._ns_labels[namespace]


def _parse(obj: JsonObject, namespace: str) -> _Policy | None:
    spec = obj.get("spec") or {}
    types = spec.get("policyTypes") or ["Ingress"]
    if "Ingress" not in types:
        return None
    rules = []
    for rule in spec.get("ingress") or []:
        peers: tuple[_Peer, ...] | None = None
        if rule.get("from"):
            peers = tuple(_peer(p) for p in rule["from"])
        ports = None
        if rule.get("ports"):
            ports = tuple(
                (str(p.get("protocol") or "TCP"), p.get("port"), p.get("endPort"))
                for p in rule["ports"]
            )
        rules.append(_Rule(peers=peers, ports=ports))
    return _Policy(
        name=str(obj["metadata"]["name"]),
        namespace=namespace,
        # A missing podSelector is the empty one (it is required, and {} selects every pod).
        selects=from_label_selector(spec.get("podSelector") or {}),
        rules=tuple(rules),
    )


def _peer(raw: Mapping[str, Any]) -> _Peer:
    block = raw.get("ipBlock")
    return _Peer(
        pods=from_label_selector(raw["podSelector"]) if "podSelector" in raw else None,
        namespaces=(
            from_label_selector(raw["namespaceSelector"]) if "namespaceSelector" in raw else None
        ),
        cidr=str(block.get("cidr", "")) if block else None,
        excepted=tuple(str(e) for e in (block.get("except") or [])) if block else (),
    )


def _port_matches(
    rule: tuple[str, int | str | None, int | None], dest: JsonObject, port: int, protocol: str
) -> bool:
    proto, wanted, end = rule
    if proto != protocol:
        return False
    if wanted is None:
        return True
    if isinstance(wanted, int) or str(wanted).isdigit():
        low = int(wanted)
        return low <= port <= (end if end is not None else low)
    # A named port: whatever number the destination container gives that name.
    for container in (dest.get("spec") or {}).get("containers") or []:
        for p in container.get("ports") or []:
            if p.get("name") == wanted and int(p.get("containerPort", 0)) == port:
                return str(p.get("protocol") or "TCP") == protocol
    return False


def _in_block(ip: str, cidr: str, excepted: tuple[str, ...]) -> bool:
    try:
        address = ipaddress.ip_address(ip)
        if address not in ipaddress.ip_network(cidr, strict=False):
            return False
        return not any(address in ipaddress.ip_network(e, strict=False) for e in excepted)
    except ValueError:
        return False
