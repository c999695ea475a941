"""NetworkPolicies as diagnosis reads them: which pods a policy guards, and whom it admits.

Only the ingress side and only callers inside the namespace: that is what a caller timing out
on a healthy callee in the same namespace needs to be explained. The semantics are the API's:
a pod no Ingress policy selects accepts everything; once one selects it, only what some rule
of some selecting policy admits gets through (a rule without `from` admits every source; a
peer with only `podSelector` means pods of the policy's namespace; a `namespaceSelector`
peer or an `ipBlock` is read here as admitting, since diagnosis cannot judge it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.model import JsonObject


@dataclass(frozen=True, slots=True, kw_only=True)
class Selector:
    """A metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn, Exists,
    DoesNotExist). An empty one matches every pod."""

    labels: Mapping[str, str]
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.labels.items()):
            return False
        for key, op, values in self.expressions:
            present = key in labels
            if op == "In" and (not present or labels[key] not in values):
                return False
            if op == "NotIn" and present and labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True

    def __str__(self) -> str:
        parts = [f"{k}={v}" for k, v in sorted(self.labels.items())]
        parts += [f"{k} {op} ({','.join(v)})" for k, op, v in self.expressions]
        return ", ".join(parts) or "every pod"


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkPolicyInfo:
    name: str
    selects: Selector
    #: Per ingress rule: None when it admits every source, else the pod selectors of its
    #: same-namespace peers (an entry of None: a peer diagnosis reads as admitting anyone).
    rules: tuple[tuple[Selector | None, ...] | None, ...]

    def admits(self, labels: Mapping[str, str]) -> bool:
        """Does some rule admit a same-namespace pod with these labels (on some port)?"""
        for peers in self.rules:
            if peers is None:
                return True
            if any(p is None or p.matches(labels) for p in peers):
                return True
        return False

    def describe(self) -> str:
        allowed = []
        for peers in self.rules:
            if peers is None:
                allowed.append("any source")
                continue
            allowed += ["pods outside the namespace" if p is None else str(p) for p in peers]
        return f"NetworkPolicy {self.name} guards pods [{self.selects}]; ingress only from " + (
            "; ".join(allowed) if allowed else "nobody (deny all)"
        )


def parse_network_policy(body: JsonObject) -> NetworkPolicyInfo | None:
    """None for a policy with no Ingress side."""
    spec = body.get("spec") or {}
    if "Ingress" not in (spec.get("policyTypes") or ["Ingress"]):
        return None
    rules: list[tuple[Selector | None, ...] | None] = []
    for rule in spec.get("ingress") or []:
        peers = rule.get("from") or []
        if not peers:
            rules.append(None)
            continue
        rules.append(tuple(_peer(p) for p in peers))
    return NetworkPolicyInfo(
        name=str((body.get("metadata") or {}).get("name", "")),
        selects=_selector(spec.get("podSelector") or {}),
        rules=tuple(rules),
    )


def guarding(policies: Sequence[NetworkPolicyInfo], labels: Mapping[str, str]) -> list[str]:
    """The policies that select a pod with these labels."""
    return [p.name for p in policies if p.selects.matches(labels)]


def denied(
    policies: Sequence[NetworkPolicyInfo], dest: Mapping[str, str], src: Mapping[str, str]
) -> bool:
    """Is a same-namespace pod labelled `src` denied ingress to a pod labelled `dest`?"""
    selecting = [p for p in policies if p.selects.matches(dest)]
    return bool(selecting) and not any(p.admits(src) for p in selecting)


def _peer(raw: Mapping[str, Any]) -> Selector | None:
    if "ipBlock" in raw or "namespaceSelector" in raw:
        return None
    return _selector(raw.get("podSelector") or {})


def _selector(raw: Mapping[str, Any]) -> Selector:
    labels = {str(k): str(v) for k, v in (raw.get("matchLabels") or {}).items()}
    expressions = tuple(
        (
            str(e.get("key", "")),
            str(e.get("operator", "")),
            tuple(str(v) for v in e.get("values") or []),
        )
        for e in raw.get("matchExpressions") or []
    )
    return Selector(labels=labels, expressions=expressions)
