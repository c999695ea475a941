"""Which lists are maps, keyed by which field.

The real types declare `patchMergeKey`/`patchStrategy` on their list fields; strategic merge
patch and managedFields both need them. The emulator keys them by field name, which is
unambiguous for the kinds it serves except `ports` (a Container's are keyed by
`containerPort`, a Service's by `port`), told apart by the items themselves. Lists not named
here (tolerations, taints, command, args, endpoint subsets, ...) are atomic: a patch replaces
them whole, as on the real server.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "addresses": "type",
    "ownerReferences": "uid",
    "podIPs": "ip",
    "hostIPs": "ip",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}

#: Lists of scalars merged as sets (`patchStrategy: merge` on a []string).
PRIMITIVE_SETS = frozenset({"finalizers"})


def merge_key(field: str, items: Iterable[Any]) -> str | None:
    if field == "ports":
        for item in items:
            if isinstance(item, dict) and "containerPort" in item:
                return "containerPort"
        return "port"
    return MERGE_KEYS.get(field)
