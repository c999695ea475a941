"""Server-side printing: the `Table` answers that make `kubectl get` show its usual columns.

kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints whatever columns
the server defines; the columns and cell formats here follow the real server's printers
(pods: NAME READY STATUS RESTARTS AGE, with the same STATUS reasoning; deployments: NAME
READY UP-TO-DATE AVAILABLE AGE; ...). Ages are measured in lab time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from agents.model import JsonObject
from lab.kube.server import printers

Column = tuple[str, str, int]  # name, type, priority
Printer = Callable[[JsonObject, datetime], list[Any]]

_NAME: Column = ("Name", "string", 0)
_AGE: Column = ("Age", "string", 0)

_DESCRIPTIONS = {
    "Name": "Name must be unique within a namespace.",
    "Age": "CreationTimestamp is a timestamp representing the server time when this object was "
    "created.",
}


PRINTERS: dict[str, tuple[tuple[Column, ...], Printer]] = {
    "Pod": (
        (
            _NAME,
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            _AGE,
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ),
        printers.pod_row,
    ),
    "Deployment": (
        (
            _NAME,
            ("Ready", "string", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            _AGE,
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ),
        printers.deployment_row,
    ),
    "ReplicaSet": (
        (
            _NAME,
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            _AGE,
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ),
        printers.replica_set_row,
    ),
    "StatefulSet": (
        (_NAME, ("Ready", "string", 0), _AGE, ("Containers", "string", 1), ("Images", "string", 1)),
        printers.stateful_set_row,
    ),
    "HorizontalPodAutoscaler": (
        (
            _NAME,
            ("Reference", "string", 0),
            ("Targets", "string", 0),
            ("MinPods", "string", 0),
            ("MaxPods", "integer", 0),
            ("Replicas", "integer", 0),
            _AGE,
        ),
        printers.hpa_row,
    ),
    "Service": (
        (
            _NAME,
            ("Type", "string", 0),
            ("Cluster-IP", "string", 0),
            ("External-IP", "string", 0),
            ("Port(s)", "string", 0),
            _AGE,
            ("Selector", "string", 1),
        ),
        printers.service_row,
    ),
    "Endpoints": ((_NAME, ("Endpoints", "string", 0), _AGE), printers.endpoints_row),
    "EndpointSlice": (
        (
            _NAME,
            ("AddressType", "string", 0),
            ("Ports", "string", 0),
            ("Endpoints", "string", 0),
            _AGE,
        ),
        printers.endpoint_slice_row,
    ),
    "ConfigMap": ((_NAME, ("Data", "string", 0), _AGE), printers.config_map_row),
    "Secret": ((_NAME, ("Type", "string", 0), ("Data", "string", 0), _AGE), printers.secret_row),
    "Namespace": ((_NAME, ("Status", "string", 0), _AGE), printers.namespace_row),
    "Node": (
        (
            _NAME,
            ("Status", "string", 0),
            ("Roles", "string", 0),
            _AGE,
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ),
        printers.node_row,
    ),
    "Event": (
        (
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Subobject", "string", 1),
            ("Source", "string", 1),
            ("Message", "string", 0),
            ("First Seen", "string", 1),
            ("Count", "string", 1),
            ("Name", "string", 1),
        ),
        printers.event_row,
    ),
    "ResourceQuota": (
        (_NAME, _AGE, ("Request", "string", 0), ("Limit", "string", 0)),
        printers.quota_row,
    ),
    "PersistentVolumeClaim": (
        (
            _NAME,
            ("Status", "string", 0),
            ("Volume", "string", 0),
            ("Capacity", "string", 0),
            ("Access Modes", "string", 0),
            ("StorageClass", "string", 0),
            ("VolumeAttributesClass", "string", 0),
            _AGE,
            ("VolumeMode", "string", 1),
        ),
        printers.pvc_row,
    ),
    "Lease": ((_NAME, ("Holder", "string", 0), _AGE), printers.lease_row),
    "PodDisruptionBudget": (
        (
            _NAME,
            ("Min Available", "string", 0),
            ("Max Unavailable", "string", 0),
            ("Allowed Disruptions", "integer", 0),
            _AGE,
        ),
        printers.pdb_row,
    ),
    "Job": (
        (
            _NAME,
            ("Status", "string", 0),
            ("Completions", "string", 0),
            ("Duration", "string", 0),
            _AGE,
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ),
        printers.job_row,
    ),
    "ServiceAccount": ((_NAME, ("Secrets", "string", 0), _AGE), printers.service_account_row),
}


def table(
    kind: str,
    objects: Iterable[JsonObject],
    now: datetime,
    *,
    include_object: str = "Metadata",
    resource_version: str = "",
    continue_token: str | None = None,
    remaining: int | None = None,
) -> JsonObject:
    columns, printer = PRINTERS.get(kind, ((_NAME, _AGE), printers.default_row))
    rows = []
    for obj in objects:
        row: JsonObject = {"cells": printer(obj, now)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        rows.append(row)
    metadata: JsonObject = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    if remaining is not None:
        metadata["remainingItemCount"] = remaining
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [
            {
                "name": name,
                "type": type_,
                "format": "name" if name == "Name" else "",
                "description": _DESCRIPTIONS.get(name, name),
                "priority": priority,
            }
            for name, type_, priority in columns
        ],
        "rows": rows,
    }
