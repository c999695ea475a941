"""Generates `lab/kube/schema.json` from the official client's models.

The emulator decodes request bodies the way the real API server does (typed fields, unknown
fields dropped, type mismatches refused with 400). It cannot import `kubernetes` (the lab
never talks to the SDK), so the field types of the kinds it serves are frozen into a JSON file
by this script. `test_schema.py` fails when the file drifts from the installed client.

Run: `.venv/bin/python -m tests.lab.kube.schema_gen` to rewrite the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kubernetes.client.models as models

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "lab" / "kube" / "schema.json"

#: The models of the kinds the emulator serves, and of the bodies it accepts.
ROOTS = (
    "V1Namespace",
    "V1Node",
    "V1Pod",
    "V1Service",
    "V1Endpoints",
    "V1ConfigMap",
    "V1Secret",
    "V1ServiceAccount",
    "V1LimitRange",
    "CoreV1Event",
    "EventsV1Event",
    "V1Deployment",
    "V1ReplicaSet",
    "V1StatefulSet",
    "V1ControllerRevision",
    "V2HorizontalPodAutoscaler",
    "V1ResourceQuota",
    "V1PersistentVolumeClaim",
    "V1Lease",
    "V1PodDisruptionBudget",
    "V1Job",
    "V1Eviction",
    "V1Scale",
    "V1EndpointSlice",
    "V1NetworkPolicy",
    "V1DeleteOptions",
    "V1Role",
    "V1ClusterRole",
    "V1RoleBinding",
    "V1ClusterRoleBinding",
    "V1SelfSubjectAccessReview",
    "V1SelfSubjectRulesReview",
)


def _is_model(name: str) -> bool:
    value = getattr(models, name, None)
    return isinstance(value, type) and hasattr(value, "openapi_types")


def build() -> dict[str, Any]:
    out: dict[str, dict[str, str]] = {}

    def walk(name: str) -> None:
        if name in out:
            return
        cls = getattr(models, name)
        fields: dict[str, str] = {}
        out[name] = fields
        for attr, type_name in cls.openapi_types.items():
            fields[cls.attribute_map[attr]] = type_name
            for sub in re.findall(r"\b([A-Z]\w+)\b", type_name):
                if _is_model(sub):
                    walk(sub)

    for root in ROOTS:
        walk(root)
    return {"models": dict(sorted(out.items()))}


def render() -> str:
    return json.dumps(build(), sort_keys=True, indent=0, separators=(",", ":")) + "\n"


def main() -> None:
    SCHEMA_PATH.write_text(render())


if __name__ == "__main__":
    main()
