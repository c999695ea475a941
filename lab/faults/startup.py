"""Faults that keep a container from starting or from becoming ready, for a reason written in
the spec: a readiness probe aimed at a port nothing listens on, an env reference to a
ConfigMap key that is gone, an init container that fails, an image in a private repository
pulled without credentials.

Each is the edit an operator makes with kubectl; the kubelet model then probes, resolves env,
runs init containers and pulls images as it always does (`lab.kube.controllers.kubelet`,
`lab.sim.runtime`, `lab.sim.images`). With one replica a rolling update keeps the old pod while
the new one never becomes available, so most of these show as a stuck rollout whose new pods
are not Ready; the pods that existed before keep serving until something replaces them.
"""

from __future__ import annotations

from typing import Any

from agents.model import Category, FaultLevel, FaultType, JsonObject
from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.kubeops import container_patch, deployment_of, main_container, rollout_restart
from lab.faults.model import Param
from lab.sim.kubeobj import probe_port
from lab.sim.model import Wire

MISCONFIG = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.MISCONFIGURATION)
APP_MISCONFIG = Category(level=FaultLevel.APPLICATION, type=FaultType.MISCONFIGURATION)

#: Ports people copy into probes from other services' manifests, most common first.
_USUAL_PORTS = (8080, 9090, 8000, 3000)


def _listening_ports(container: JsonObject) -> set[int]:
    return {int(p.get("containerPort", 0)) for p in container.get("ports") or []}


class ReadinessProbeWrongPort(Fault):
    id = "readiness-probe-wrong-port"
    description = "point a readiness probe at a port the container does not serve; never Ready"
    category = MISCONFIG
    params = (
        Param(
            name="port",
            kind=int,
            help="the port the probe checks",
            default="8080 (9090 when the container serves 8080)",
            minimum=1,
            maximum=65535,
        ),
    )
    default_targets = targets({"hotel-reservation": "search", "online-shop": "product-catalog"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        container = main_container(dep)
        probe = container.get("readinessProbe")
        if not isinstance(probe, dict):
            raise BadParameter(f"{self.id}: {ctx.target}'s container has no readiness probe")
        handler = next((k for k in ("tcpSocket", "httpGet", "grpc") if k in probe), None)
        if handler is None:
            raise BadParameter(f"{self.id}: {ctx.target}'s readiness probe checks no port")
        served = _listening_ports(container)
        if "port" not in ctx.params:
            ctx.params["port"] = next(p for p in _USUAL_PORTS if p not in served)
        port = int(ctx.params["port"])
        if port in served:
            raise BadParameter(f"{self.id}: {ctx.target} serves port {port}; choose another")
        old = probe_port(container, probe)
        name = dep["metadata"]["name"]
        ctx.patch(
            "Deployment",
            name,
            container_patch(container["name"], readinessProbe={handler: {"port": port}}),
            patch_type="strategic",
            change=f"Deployment/{name}: container {container['name']} readinessProbe "
            f"{handler}.port {old} → {port}",
        )


def _key_refs(container: JsonObject) -> list[tuple[str, str]]:
    """(ConfigMap, key) of each required configMapKeyRef in the container's env."""
    out = []
    for entry in container.get("env") or []:
        ref = (entry.get("valueFrom") or {}).get("configMapKeyRef") or {}
        if ref.get("name") and ref.get("key") and not ref.get("optional"):
            out.append((str(ref["name"]), str(ref["key"])))
    return out


def _renamed(key: str) -> str:
    """What a tidy-up renames a key to: ADDR spelled out, else a versioned name."""
    if key.endswith("_ADDR"):
        return f"{key}ESS"
    return f"{key}_V2"


class MissingConfigKey(Fault):
    id = "missing-config-key"
    description = (
        "rename a ConfigMap key a workload's env reads, restart it (CreateContainerConfigError)"
    )
    category = APP_MISCONFIG
    params = (
        Param(
            name="key",
            kind=str,
            help="the key to rename",
            default="the first key of the target's env that no other workload reads",
        ),
        Param(
            name="new_key",
            kind=str,
            help="its new name",
            default="the key with _ADDR spelled _ADDRESS, else with _V2 appended",
        ),
    )
    default_targets = targets({"hotel-reservation": "rate", "online-shop": "cart"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        refs = _key_refs(main_container(dep))
        if not refs:
            raise BadParameter(f"{self.id}: {ctx.target} reads no ConfigMap key from its env")
        if "key" not in ctx.params:
            shared = self._read_elsewhere(ctx, dep)
            own = [r for r in refs if r not in shared]
            if not own:
                raise BadParameter(
                    f"{self.id}: every ConfigMap key {ctx.target} reads is read by others too; "
                    "pass --param key="
                )
            ctx.params["key"] = own[0][1]
        key = str(ctx.params["key"])
        cm_name = next((cm for cm, k in refs if k == key), None)
        if cm_name is None:
            raise BadParameter(f"{self.id}: {ctx.target} does not read key {key!r}")
        data: dict[str, Any] = dict(ctx.get("ConfigMap", cm_name).get("data") or {})
        if key not in data:
            raise BadParameter(f"{self.id}: ConfigMap {cm_name} has no key {key!r}")
        new_key = str(ctx.params.setdefault("new_key", _renamed(key)))
        if new_key in data:
            raise BadParameter(f"{self.id}: ConfigMap {cm_name} already has {new_key!r}")
        # A merge patch with null deletes the key: what `kubectl edit` sends for a rename.
        ctx.patch(
            "ConfigMap",
            cm_name,
            {"data": {key: None, new_key: data[key]}},
            patch_type="merge",
            change=f"ConfigMap/{cm_name}: data.{key} renamed to data.{new_key}",
        )
        # Env is read when a container starts: the operator restarts to "apply" the change.
        rollout_restart(ctx, dep["metadata"]["name"])

    @staticmethod
    def _read_elsewhere(ctx: FaultContext, dep: JsonObject) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for kind in ("Deployment", "StatefulSet"):
            for other in ctx.api.list(kind, ctx.namespace):
                if other["metadata"]["uid"] == dep["metadata"]["uid"]:
                    continue
                spec = other["spec"]["template"]["spec"]
                for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
                    out.update(_key_refs(container))
        return out


#: Dependencies a start-up gate waits for (databases, caches, brokers), before any other call.
_GATED = (Wire.MONGODB, Wire.REDIS, Wire.MEMCACHED, Wire.KAFKA)
GATE_IMAGE = "busybox:1.36"


class InitContainerFails(Fault):
    id = "init-container-fails"
    description = (
        "add an init container checking a host that does not resolve (Init:CrashLoopBackOff)"
    )
    category = APP_MISCONFIG
    params = (
        Param(
            name="host",
            kind=str,
            help="the host the init container checks with nc -z",
            default="the target's database (else first dependency) in the '<namespace>-staging' "
            "namespace",
        ),
    )
    default_targets = targets({"hotel-reservation": "user", "online-shop": "accounting"})

    def apply(self, ctx: FaultContext) -> None:
        program = ctx.bundle.model.services[ctx.target]
        calls = sorted(program.calls, key=lambda c: c.protocol not in _GATED)
        if not calls:
            raise BadParameter(f"{self.id}: {ctx.target} depends on nothing to wait for")
        call = calls[0]
        if "host" not in ctx.params:
            ctx.params["host"] = f"{call.target}.{ctx.namespace}-staging"
        host = str(ctx.params["host"])
        if ctx.world.registry.get(GATE_IMAGE) is None:
            raise BadParameter(f"{self.id}: the registry has no {GATE_IMAGE}")
        dep = deployment_of(ctx)
        name = dep["metadata"]["name"]
        gate = f"wait-for-{call.target}"
        existing = dep["spec"]["template"]["spec"].get("initContainers") or []
        if any(c.get("name") == gate for c in existing):
            raise BadParameter(f"{self.id}: {name} already has an init container {gate}")
        script = f"nc -z -w 2 {host} {call.port}"
        ctx.patch(
            "Deployment",
            name,
            {
                "spec": {
                    "template": {
                        "spec": {
                            "initContainers": [
                                {
                                    "name": gate,
                                    "image": GATE_IMAGE,
                                    "command": ["sh", "-c", script],
                                }
                            ]
                        }
                    }
                }
            },
            patch_type="strategic",
            change=f"Deployment/{name}: init container {gate} added ({GATE_IMAGE}, "
            f"sh -c '{script}')",
        )


class ImagePullUnauthorized(Fault):
    id = "image-pull-unauthorized"
    description = (
        "move an image to a private mirror without imagePullSecrets (401, ImagePullBackOff)"
    )
    category = MISCONFIG
    params = (
        Param(
            name="registry",
            kind=str,
            help="the private registry host that mirrors the image (same path and tag)",
            default="registry.lab.internal",
        ),
    )
    default_targets = targets({"hotel-reservation": "reservation", "online-shop": "shipping"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        container = main_container(dep)
        current = str(container.get("image", ""))
        host = str(ctx.params.setdefault("registry", "registry.lab.internal"))
        path = current.split("/", 1)[1] if "/" in current else f"library/{current}"
        image = f"{host}/{path}"
        registry = ctx.world.registry
        if registry.account(image) is None:
            raise BadParameter(f"{self.id}: {image} is not in a private repository of the lab")
        secrets = dep["spec"]["template"]["spec"].get("imagePullSecrets") or []
        if secrets:
            raise BadParameter(
                f"{self.id}: {ctx.target} already has imagePullSecrets; the pull would succeed"
            )
        name = dep["metadata"]["name"]
        ctx.patch(
            "Deployment",
            name,
            container_patch(container["name"], image=image),
            patch_type="strategic",
            change=f"Deployment/{name}: container {container['name']} image {current} → {image}",
        )
