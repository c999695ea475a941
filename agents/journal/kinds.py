"""The kinds the change journal watches, and which part of each it tracks.

A workload's or Service's *spec*, a ConfigMap's *data*, and the spec of what feeds a workload
(quotas, LimitRanges, autoscalers, volume claims, NetworkPolicies, disruption budgets): the parts
people change on purpose and mitigations restore. Nodes (cluster-scoped) are read by the
diagnosis, not journaled yet. Status and server-managed metadata change all the time and say
nothing about who broke what. Secrets are never watched.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.model import JsonObject


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchedKind:
    api_version: str
    kind: str
    fields: tuple[str, ...]  # the top-level fields tracked

    def tracked(self, body: Mapping[str, Any]) -> JsonObject:
        """The tracked part of an object body (a deep copy)."""
        return {f: copy.deepcopy(body[f]) for f in self.fields if body.get(f) is not None}


DEPLOYMENT = WatchedKind(api_version="apps/v1", kind="Deployment", fields=("spec",))
STATEFUL_SET = WatchedKind(api_version="apps/v1", kind="StatefulSet", fields=("spec",))
SERVICE = WatchedKind(api_version="v1", kind="Service", fields=("spec",))
CONFIG_MAP = WatchedKind(api_version="v1", kind="ConfigMap", fields=("data", "binaryData"))

#: What feeds a workload without being one: a quota or LimitRange refuses or shrinks its pods,
#: an autoscaler sets its replicas, a claim holds its volume. A change to one is a suspect
#: only when its object is on the failing path (the diagnosis decides that).
RESOURCE_QUOTA = WatchedKind(api_version="v1", kind="ResourceQuota", fields=("spec",))
LIMIT_RANGE = WatchedKind(api_version="v1", kind="LimitRange", fields=("spec",))
HPA = WatchedKind(api_version="autoscaling/v2", kind="HorizontalPodAutoscaler", fields=("spec",))
PVC = WatchedKind(api_version="v1", kind="PersistentVolumeClaim", fields=("spec",))
#: What stands between a workload and its callers or its disruptions.
NETWORK_POLICY = WatchedKind(
    api_version="networking.k8s.io/v1", kind="NetworkPolicy", fields=("spec",)
)
PDB = WatchedKind(api_version="policy/v1", kind="PodDisruptionBudget", fields=("spec",))

WATCHED_KINDS: tuple[WatchedKind, ...] = (
    DEPLOYMENT,
    STATEFUL_SET,
    SERVICE,
    CONFIG_MAP,
    RESOURCE_QUOTA,
    LIMIT_RANGE,
    HPA,
    PVC,
    NETWORK_POLICY,
    PDB,
)

#: Kinds the journal refuses to watch, whatever it is configured with.
NEVER_WATCHED = frozenset({"Secret"})
