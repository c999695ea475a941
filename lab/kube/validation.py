"""Validation: what the real server refuses with 422 Invalid, worded as it words it.

Only well-typed objects reach this module (`schema.decode` ran first), so checks are about
values: names, labels, replicas, container images, ports, selectors matching templates, and
the fields that are immutable on update. Each failure is one `details.causes` entry.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any

from agents.model import JsonObject
from lab.kube import quantity
from lab.kube.errors import field_error, invalid
from lab.kube.resources import ResourceType

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

#: Kinds whose names must be RFC 1123 labels rather than subdomains.
_LABEL_NAMED = frozenset({"Namespace", "Service"})


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


class Causes:
    def __init__(self) -> None:
        self.items: list[JsonObject] = []

    def required(self, field: str, detail: str = "") -> None:
        message = "Required value" + (f": {detail}" if detail else "")
        self.items.append(field_error("FieldValueRequired", field, message))

    def invalid(self, field: str, value: Any, detail: str) -> None:
        message = f"Invalid value: {_show(value)}: {detail}"
        self.items.append(field_error("FieldValueInvalid", field, message))

    def unsupported(self, field: str, value: Any, supported: tuple[str, ...]) -> None:
        options = ", ".join(f'"{s}"' for s in supported)
        message = f"Unsupported value: {_show(value)}: supported values: {options}"
        self.items.append(field_error("FieldValueNotSupported", field, message))

    def duplicate(self, field: str, value: Any) -> None:
        self.items.append(
            field_error("FieldValueDuplicate", field, f"Duplicate value: {_show(value)}")
        )

    def not_found(self, field: str, value: Any) -> None:
        self.items.append(field_error("FieldValueNotFound", field, f"Not found: {_show(value)}"))

    def forbidden(self, field: str, detail: str) -> None:
        self.items.append(field_error("FieldValueForbidden", field, f"Forbidden: {detail}"))


def _labels(c: Causes, labels: Any, field: str) -> None:
    for key, value in (labels or {}).items():
        name = key.rsplit("/", 1)[-1]
        if not name or len(name) > 63 or not _QUALIFIED.match(name):
            c.invalid(
                field,
                key,
                "name part must consist of alphanumeric characters, '-', '_' "
                "or '.', and must start and end with an alphanumeric character",
            )
        if len(value) > 63:
            c.invalid(field, value, "must be no more than 63 characters")
        elif not _LABEL_VALUE.match(value):
            c.invalid(field, value, LABEL_VALUE_MSG)


def metadata(c: Causes, kind: str, meta: JsonObject) -> None:
    name = meta.get("name", "")
    if not name:
        c.required("metadata.name", "name or generateName is required")
    elif kind in _LABEL_NAMED:
        if len(name) > 63 or not _LABEL.match(name):
            c.invalid("metadata.name", name, LABEL_MSG)
    elif len(name) > 253 or not _SUBDOMAIN.match(name):
        c.invalid("metadata.name", name, SUBDOMAIN_MSG)
    _labels(c, meta.get("labels"), "metadata.labels")
    for key in meta.get("annotations") or {}:
        name_part = key.rsplit("/", 1)[-1]
        if not name_part or not _QUALIFIED.match(name_part):
            c.invalid(
                "metadata.annotations",
                key,
                "name part must consist of alphanumeric characters, '-', '_' or '.'",
            )
    size = sum(len(k) + len(v) for k, v in (meta.get("annotations") or {}).items())
    if size > 256 * 1024:
        c.invalid("metadata.annotations", "", "Too long: must have at most 262144 bytes")
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        for required in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(required):
                c.required(f"metadata.ownerReferences[{i}].{required}")


def _resources(c: Causes, resources: JsonObject, field: str) -> None:
    limits = resources.get("limits") or {}
    for section in ("limits", "requests"):
        for name, value in (resources.get(section) or {}).items():
            if not quantity.is_valid(value):
                c.invalid(f"{field}.{section}[{name}]", value, "must be a valid quantity")
            elif quantity.parse(value) < 0:
                c.invalid(f"{field}.{section}[{name}]", value, "must be greater than or equal to 0")
    for name, request in (resources.get("requests") or {}).items():
        limit = limits.get(name)
        if not isinstance(limit, str) or not quantity.is_valid(limit):
            continue
        if quantity.is_valid(request) and quantity.parse(request) > quantity.parse(limit):
            c.invalid(
                f"{field}.requests",
                request,
                f"must be less than or equal to {name} limit of {limit}",
            )


def _container(c: Causes, container: JsonObject, field: str, volumes: set[str]) -> None:
    name = container.get("name", "")
    if not name:
        c.required(f"{field}.name")
    elif len(name) > 63 or not _LABEL.match(name):
        c.invalid(f"{field}.name", name, LABEL_MSG)
    if not container.get("image", "").strip():
        c.required(f"{field}.image")
    seen_ports: set[tuple[int, str]] = set()
    for i, port in enumerate(container.get("ports") or []):
        number = port.get("containerPort", 0)
        if not 1 <= number <= 65535:
            c.invalid(
                f"{field}.ports[{i}].containerPort",
                number,
                "must be between 1 and 65535, inclusive",
            )
        key = (number, port.get("protocol", "TCP"))
        if key in seen_ports:
            c.duplicate(f"{field}.ports[{i}]", f"{number}/{key[1]}")
        seen_ports.add(key)
        if port.get("name") and (len(port["name"]) > 15 or not _PORT_NAME.match(port["name"])):
            c.invalid(
                f"{field}.ports[{i}].name",
                port["name"],
                "must be no more than 15 "
                "characters and consist of lower case alphanumeric characters or '-'",
            )
    for i, env in enumerate(container.get("env") or []):
        if not env.get("name"):
            c.required(f"{field}.env[{i}].name")
    _resources(c, container.get("resources") or {}, f"{field}.resources")
    for i, mount in enumerate(container.get("volumeMounts") or []):
        if mount.get("name") not in volumes:
            c.not_found(f"{field}.volumeMounts[{i}].name", mount.get("name", ""))
        if not mount.get("mountPath"):
            c.required(f"{field}.volumeMounts[{i}].mountPath")


def pod_spec(c: Causes, spec: JsonObject, field: str) -> None:
    volumes: set[str] = set()
    for i, volume in enumerate(spec.get("volumes") or []):
        name = volume.get("name", "")
        if not name:
            c.required(f"{field}.volumes[{i}].name")
        elif name in volumes:
            c.duplicate(f"{field}.volumes[{i}].name", name)
        volumes.add(name)
    containers = spec.get("containers") or []
    if not containers:
        c.required(f"{field}.containers")
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or []):
            _container(c, container, f"{field}.{group}[{i}]", volumes)
            name = container.get("name", "")
            if name and name in names:
                c.duplicate(f"{field}.{group}[{i}].name", name)
            names.add(name)
    policy = spec.get("restartPolicy", "Always")
    if policy not in ("Always", "OnFailure", "Never"):
        c.unsupported(f"{field}.restartPolicy", policy, ("Always", "OnFailure", "Never"))
    for i, toleration in enumerate(spec.get("tolerations") or []):
        op = toleration.get("operator", "Equal")
        if op not in ("Equal", "Exists"):
            c.unsupported(f"{field}.tolerations[{i}].operator", op, ("Equal", "Exists"))
        if op == "Exists" and toleration.get("value"):
            c.invalid(
                f"{field}.tolerations[{i}].operator",
                op,
                "value must be empty when `operator` is 'Exists'",
            )


def _selector_matches(selector: JsonObject, labels: JsonObject) -> bool:
    from lab.kube.selectors import from_label_selector

    return from_label_selector(selector).matches(labels)


def _workload(c: Causes, obj: JsonObject, *, kind: str) -> None:
    spec = obj.get("spec") or {}
    replicas = spec.get("replicas", 1)
    if replicas < 0:
        c.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
    selector = spec.get("selector")
    if selector is None:
        c.required("spec.selector")
    elif not selector.get("matchLabels") and not selector.get("matchExpressions"):
        c.invalid("spec.selector", selector, "empty selector is invalid for deployment")
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    _labels(c, labels, "spec.template.metadata.labels")
    if selector and not _selector_matches(selector, labels):
        c.invalid(
            "spec.template.metadata.labels", labels, "`selector` does not match template `labels`"
        )
    if kind != "ReplicaSet" or template:
        pod_spec(c, template.get("spec") or {}, "spec.template.spec")
        policy = (template.get("spec") or {}).get("restartPolicy", "Always")
        if policy != "Always":
            c.unsupported("spec.template.spec.restartPolicy", policy, ("Always",))
    for name in ("revisionHistoryLimit", "minReadySeconds"):
        if spec.get(name, 0) < 0:
            c.invalid(f"spec.{name}", spec[name], "must be greater than or equal to 0")


def _int_or_percent(value: Any) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return int(value[:-1])
    return None


def deployment(c: Causes, obj: JsonObject) -> None:
    _workload(c, obj, kind="Deployment")
    spec = obj.get("spec") or {}
    strategy = spec.get("strategy") or {}
    kind = strategy.get("type", "RollingUpdate")
    if kind not in ("RollingUpdate", "Recreate"):
        c.unsupported("spec.strategy.type", kind, ("Recreate", "RollingUpdate"))
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate" and rolling:
        c.forbidden(
            "spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"
        )
    if kind == "RollingUpdate" and rolling:
        surge = _int_or_percent(rolling.get("maxSurge", "25%"))
        unavailable = _int_or_percent(rolling.get("maxUnavailable", "25%"))
        for name, value in (("maxSurge", surge), ("maxUnavailable", unavailable)):
            if value is None or value < 0:
                c.invalid(
                    f"spec.strategy.rollingUpdate.{name}",
                    rolling.get(name),
                    "must be an integer or percentage (e.g '5%') >= 0",
                )
        if surge == 0 and unavailable == 0:
            c.invalid(
                "spec.strategy.rollingUpdate.maxUnavailable", 0, "may not be 0 when `maxSurge` is 0"
            )
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None and deadline <= spec.get("minReadySeconds", 0):
        c.invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")


def replica_set(c: Causes, obj: JsonObject) -> None:
    _workload(c, obj, kind="ReplicaSet")


def stateful_set(c: Causes, obj: JsonObject) -> None:
    _workload(c, obj, kind="StatefulSet")
    policy = (obj.get("spec") or {}).get("podManagementPolicy", "OrderedReady")
    if policy not in ("OrderedReady", "Parallel"):
        c.unsupported("spec.podManagementPolicy", policy, ("OrderedReady", "Parallel"))


def pod(c: Causes, obj: JsonObject) -> None:
    pod_spec(c, obj.get("spec") or {}, "spec")


_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def service(c: Causes, obj: JsonObject) -> None:
    spec = obj.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    if kind not in _SERVICE_TYPES:
        c.unsupported("spec.type", kind, _SERVICE_TYPES)
    ports = spec.get("ports") or []
    if not ports and kind != "ExternalName" and spec.get("clusterIP") != "None":
        c.required("spec.ports")
    names: set[str] = set()
    for i, port in enumerate(ports):
        field = f"spec.ports[{i}]"
        number = port.get("port", 0)
        if not 1 <= number <= 65535:
            c.invalid(f"{field}.port", number, "must be between 1 and 65535, inclusive")
        target = port.get("targetPort")
        if isinstance(target, int) and not 1 <= target <= 65535:
            c.invalid(f"{field}.targetPort", target, "must be between 1 and 65535, inclusive")
        elif isinstance(target, str) and (
            len(target) > 15 or not _PORT_NAME.match(target) or not re.search("[a-z]", target)
        ):
            c.invalid(
                f"{field}.targetPort",
                target,
                "must contain at least one letter (a-z) "
                "and consist of lower case alphanumeric characters or '-'",
            )
        elif target is not None and not isinstance(target, int | str):
            c.invalid(f"{field}.targetPort", target, "must be an int or a string")
        protocol = port.get("protocol", "TCP")
        if protocol not in ("TCP", "UDP", "SCTP"):
            c.unsupported(f"{field}.protocol", protocol, ("SCTP", "TCP", "UDP"))
        name = port.get("name", "")
        if len(ports) > 1 and not name:
            c.required(f"{field}.name")
        if name and name in names:
            c.duplicate(f"{field}.name", name)
        names.add(name)
        node_port = port.get("nodePort")
        if node_port is not None and not 30000 <= node_port <= 32767:
            c.invalid(
                f"{field}.nodePort",
                node_port,
                "provided port is not in the valid range. The range of valid ports is 30000-32767",
            )
    _labels(c, spec.get("selector"), "spec.selector")


def _config_keys(c: Causes, obj: JsonObject) -> None:
    for section in ("data", "binaryData"):
        for key in obj.get(section) or {}:
            if not _CONFIG_KEY.match(key) or len(key) > 253:
                c.invalid(
                    f"{section}[{key}]",
                    key,
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                )
    size = sum(len(k) + len(str(v)) for k, v in (obj.get("data") or {}).items())
    if size > 1024 * 1024:
        c.invalid("data", "", "Too long: must have at most 1048576 bytes")


def config_map(c: Causes, obj: JsonObject) -> None:
    _config_keys(c, obj)


def hpa(c: Causes, obj: JsonObject) -> None:
    spec = obj.get("spec") or {}
    ref = spec.get("scaleTargetRef") or {}
    for name in ("kind", "name"):
        if not ref.get(name):
            c.required(f"spec.scaleTargetRef.{name}")
    low, high = spec.get("minReplicas", 1), spec.get("maxReplicas", 0)
    if low < 1:
        c.invalid("spec.minReplicas", low, "must be greater than or equal to 1")
    if high < 1:
        c.invalid("spec.maxReplicas", high, "must be greater than or equal to 1")
    elif low > high:
        c.invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`")


def resource_quota(c: Causes, obj: JsonObject) -> None:
    for name, value in ((obj.get("spec") or {}).get("hard") or {}).items():
        if not quantity.is_valid(value):
            c.invalid(f"spec.hard[{name}]", value, "must be a valid quantity")


def pvc(c: Causes, obj: JsonObject) -> None:
    spec = obj.get("spec") or {}
    if not spec.get("accessModes"):
        c.required("spec.accessModes", "at least 1 access mode is required")
    if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
        c.required("spec.resources[storage]")


_POLICY_TYPES = ("Ingress", "Egress")
_PROTOCOLS = ("TCP", "UDP", "SCTP")


def network_policy(c: Causes, obj: JsonObject) -> None:
    """What the server checks of a NetworkPolicy that the lab's data plane relies on: known
    policy types, protocols and port values, and ipBlock CIDRs."""
    spec = obj.get("spec") or {}
    for i, kind in enumerate(spec.get("policyTypes") or []):
        if kind not in _POLICY_TYPES:
            c.unsupported(f"spec.policyTypes[{i}]", kind, _POLICY_TYPES)
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            for j, port in enumerate(rule.get("ports") or []):
                at = f"spec.{direction}[{i}].ports[{j}]"
                protocol = port.get("protocol", "TCP")
                if protocol not in _PROTOCOLS:
                    c.unsupported(f"{at}.protocol", protocol, _PROTOCOLS)
                number = port.get("port")
                if isinstance(number, int) and not 0 < number < 65536:
                    c.invalid(f"{at}.port", number, "must be between 1 and 65535, inclusive")
            for j, peer in enumerate(rule.get(peers) or []):
                block = peer.get("ipBlock")
                if block is None:
                    continue
                try:
                    ipaddress.ip_network(str(block.get("cidr", "")), strict=False)
                except ValueError:
                    c.invalid(
                        f"spec.{direction}[{i}].{peers}[{j}].ipBlock.cidr",
                        block.get("cidr", ""),
                        "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                    )


VALIDATORS: dict[str, Callable[[Causes, JsonObject], None]] = {
    "Pod": pod,
    "Deployment": deployment,
    "ReplicaSet": replica_set,
    "StatefulSet": stateful_set,
    "Service": service,
    "ConfigMap": config_map,
    "Secret": config_map,
    "HorizontalPodAutoscaler": hpa,
    "ResourceQuota": resource_quota,
    "PersistentVolumeClaim": pvc,
    "NetworkPolicy": network_policy,
}


def validate(rt: ResourceType, obj: JsonObject, old: JsonObject | None = None) -> None:
    """Raise `Invalid` (422) listing every problem with `obj` (an update when `old` is set)."""
    c = Causes()
    metadata(c, rt.kind, obj.get("metadata") or {})
    validator = VALIDATORS.get(rt.kind)
    if validator is not None:
        validator(c, obj)
    if old is not None:
        from lab.kube.immutability import check

        check(c, rt.kind, old, obj)
    if c.items:
        raise invalid(rt.kind, rt.group, (obj.get("metadata") or {}).get("name", ""), c.items)
