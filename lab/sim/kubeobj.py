"""Reading Kubernetes object dicts the way a kubelet and a Go program would.

Container env is resolved the way the kubelet resolves it when it creates a container (and
only then: a later ConfigMap change reaches a process only through a restart), with the
kubelet's own error texts for a missing ConfigMap, Secret or key.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from agents.model import JsonObject
from lab.kube.runtime import ClusterView

logger = logging.getLogger(__name__)

_SUFFIX = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_FIELD_KEY = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")
_VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class EnvError(Exception):
    """The kubelet cannot build the container's config (CreateContainerConfigError)."""


def _quantity(text: Any) -> Decimal | None:
    match = _QUANTITY.match(str(text).strip())
    if not match:
        return None
    number, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:
        return None
    if suffix == "m":
        return value / 1000
    if suffix and suffix not in _SUFFIX:
        return None
    return value * _SUFFIX.get(suffix, 1)


def cpu_millis(text: Any) -> int | None:
    value = _quantity(text)
    return None if value is None else int(value * 1000)


def memory_bytes(text: Any) -> int | None:
    value = _quantity(text)
    return None if value is None else int(value)


def limits(container: JsonObject) -> tuple[int | None, int | None]:
    """(cpu millicores, memory bytes) limits of a container; None where unset."""
    lim = (container.get("resources") or {}).get("limits") or {}
    cpu = cpu_millis(lim["cpu"]) if "cpu" in lim else None
    mem = memory_bytes(lim["memory"]) if "memory" in lim else None
    return cpu, mem


def requests(container: JsonObject) -> tuple[int | None, int | None]:
    req = (container.get("resources") or {}).get("requests") or {}
    cpu = cpu_millis(req["cpu"]) if "cpu" in req else None
    mem = memory_bytes(req["memory"]) if "memory" in req else None
    return cpu, mem


def _secret_value(secret: JsonObject, key: str) -> str | None:
    data = secret.get("data") or {}
    if key in data:
        try:
            return base64.b64decode(str(data[key])).decode("utf-8", errors="replace")
        except (binascii.Error, ValueError):
            return None
    string_data = secret.get("stringData") or {}
    return str(string_data[key]) if key in string_data else None


def _source(
    view: ClusterView, kind: str, namespace: str, name: str, cache: dict[tuple[str, str], Any]
) -> JsonObject | None:
    if (kind, name) not in cache:
        cache[(kind, name)] = view.get(kind, namespace, name)
    found: JsonObject | None = cache[(kind, name)]
    return found


def _key_ref(
    view: ClusterView,
    namespace: str,
    ref: JsonObject,
    *,
    secret: bool,
    cache: dict[tuple[str, str], Any],
) -> str | None:
    kind = "Secret" if secret else "ConfigMap"
    name, key = str(ref.get("name", "")), str(ref.get("key", ""))
    optional = bool(ref.get("optional", False))
    obj = _source(view, kind, namespace, name, cache)
    if obj is None:
        if optional:
            return None
        raise EnvError(f'{kind.lower()} "{name}" not found')
    if secret:
        value = _secret_value(obj, key)
    else:
        value = (obj.get("data") or {}).get(key)
        value = None if value is None else str(value)
    if value is None and not optional:
        raise EnvError(f"couldn't find key {key} in {kind} {namespace}/{name}")
    return value


def _field_ref(pod: JsonObject, path: str) -> str:
    meta = pod.get("metadata") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": (pod.get("spec") or {}).get("nodeName"),
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName"),
        "status.podIP": (pod.get("status") or {}).get("podIP"),
        "status.hostIP": (pod.get("status") or {}).get("hostIP"),
    }
    if path in simple:
        return str(simple[path] or "")
    match = _FIELD_KEY.match(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    return ""


def resolve_env(pod: JsonObject, container: JsonObject, view: ClusterView) -> dict[str, str]:
    """The environment the process sees. Raises `EnvError` with the kubelet's message."""
    namespace = str((pod.get("metadata") or {}).get("namespace", "default"))
    cache: dict[tuple[str, str], Any] = {}
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix", ""))
        for kind, field in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = source.get(field)
            if not ref:
                continue
            obj = _source(view, kind, namespace, str(ref.get("name", "")), cache)
            if obj is None:
                if ref.get("optional"):
                    continue
                raise EnvError(f'{kind.lower()} "{ref.get("name")}" not found')
            keys = set((obj.get("data") or {}).keys())
            if kind == "Secret":
                keys |= set((obj.get("stringData") or {}).keys())
            for key in sorted(keys):
                found = (
                    _secret_value(obj, key)
                    if kind == "Secret"
                    else str((obj.get("data") or {})[key])
                )
                if found is not None:
                    env[prefix + key] = found
    for entry in container.get("env") or []:
        name = str(entry.get("name", ""))
        if "value" in entry:
            env[name] = _VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), str(entry["value"]))
            continue
        value_from = entry.get("valueFrom") or {}
        value: str | None = ""
        if "configMapKeyRef" in value_from:
            value = _key_ref(
                view, namespace, value_from["configMapKeyRef"], secret=False, cache=cache
            )
        elif "secretKeyRef" in value_from:
            value = _key_ref(view, namespace, value_from["secretKeyRef"], secret=True, cache=cache)
        elif "fieldRef" in value_from:
            value = _field_ref(pod, str(value_from["fieldRef"].get("fieldPath", "")))
        if value is not None:
            env[name] = value
    return env


def probe_port(container: JsonObject, probe: JsonObject) -> int | None:
    """The port a tcpSocket/httpGet/grpc probe checks, with named ports resolved; None for
    exec probes (which the simulated process always passes)."""
    for kind in ("tcpSocket", "httpGet", "grpc"):
        spec = probe.get(kind)
        if not isinstance(spec, dict):
            continue
        port = spec.get("port")
        if isinstance(port, int):
            return port
        if isinstance(port, str) and port.isdigit():
            return int(port)
        for declared in container.get("ports") or []:
            if declared.get("name") == port:
                return int(declared.get("containerPort", 0))
        return 0  # a named port the container does not declare: the probe can never pass
    return None


def parse_address(value: str) -> tuple[str, str | None, int | None]:
    """`[scheme://]host[.ns[.svc...]][:port]` → (service, namespace or None, port or None)."""
    rest = value.split("://", 1)[-1].split("/", 1)[0].strip()
    host, _, port_text = rest.rpartition(":") if ":" in rest else (rest, "", "")
    port = int(port_text) if port_text.isdigit() else None
    parts = host.split(".")
    service = parts[0]
    namespace = parts[1] if len(parts) > 1 and parts[1] not in ("svc", "") else None
    return service, namespace, port
