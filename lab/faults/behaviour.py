"""Faults that show only with time: a release that leaks memory, a ConfigMap edit that waits for
the next restart.

Neither breaks anything at the moment of the change, which is what makes them hard: the leaking
build runs fine for minutes until its working set reaches the memory limit and the kernel
OOM-kills it (and again after every restart); the edited ConfigMap is read only when a process
starts (env from `configMapKeyRef`), so the running pods keep the old value until something
replaces them (here, a node recycle evicting the pod a minute later). Both follow from the
simulated registry (`ImageTag.leak_mib_per_min`) and the kubelet's env resolution at start.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from agents.errors import QueryError
from agents.model import Category, FaultLevel, FaultType, JsonObject
from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.kubeops import (
    container_patch,
    deployment_of,
    main_container,
    pods_of,
)
from lab.faults.model import Injection, Param
from lab.faults.timers import timers_for
from lab.kube.errors import ApiError
from lab.sim.images import parse_image
from lab.sim.kubeobj import parse_address
from lab.sim.promql import Vector

if TYPE_CHECKING:
    from lab.sim.world import LabWorld

logger = logging.getLogger(__name__)

_MIB = 1024 * 1024
#: The leak oracle compares each container's working set with this many seconds before ...
_TREND_S = 60.0
#: ... and calls a growth beyond this a leak (load moves a working set by far less).
_LEAK_BYTES = 8 * _MIB

CODE = Category(level=FaultLevel.APPLICATION, type=FaultType.CODE_DEFECT)
APP_MISCONFIG = Category(level=FaultLevel.APPLICATION, type=FaultType.MISCONFIGURATION)


class SlowMemoryLeak(Fault):
    id = "slow-memory-leak"
    description = (
        "roll out a build that leaks memory; it is OOMKilled minutes later, again and again"
    )
    category = CODE
    params = (
        Param(
            name="tag",
            kind=str,
            help="the tag of the leaking build",
            default="the registry's leaking build of the target's image",
        ),
    )
    default_targets = targets({"hotel-reservation": "rate", "online-shop": "currency"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        container = main_container(dep)
        current = str(container.get("image", ""))
        repository = parse_image(current).repository
        if "tag" not in ctx.params:
            leaking = sorted(
                tag
                for image in ctx.bundle.model.images
                if image.repository == repository
                for tag, spec in image.tags.items()
                if spec.leak_mib_per_min > 0 and not spec.panic
            )
            if not leaking:
                raise BadParameter(
                    f"{self.id}: the registry has no leaking build of {repository}; "
                    "pass --param tag=... or choose another target"
                )
            ctx.params["tag"] = leaking[0]
        image = f"{repository}:{ctx.params['tag']}"
        spec = ctx.world.registry.get(image)
        if spec is None or spec.leak_mib_per_min <= 0 or spec.panic:
            raise BadParameter(f"{self.id}: {image} is not a build that leaks memory")
        if not (container.get("resources") or {}).get("limits", {}).get("memory"):
            # Without a limit the leak grows into the node; that is a different incident.
            raise BadParameter(f"{self.id}: {ctx.target} has no memory limit to run into")
        name = dep["metadata"]["name"]
        ctx.patch(
            "Deployment",
            name,
            container_patch(container["name"], image=image),
            patch_type="strategic",
            change=f"Deployment/{name}: container {container['name']} image {current} → {image}",
        )

    def blockers(self, world: LabWorld, injection: Injection) -> list[str]:
        """A leak is between kills most of the time, when pods are Ready and SLOs are met: it
        still holds while a live container of the target keeps growing its working set (the
        next OOMKill is a matter of minutes), or was OOMKilled. An effect, not the image: a
        raised limit with the leaking build still fails this, a rollback passes it."""
        ns = injection.namespace
        evaluator = world.promql
        at = world.clock.now().timestamp()
        query = f'container_memory_working_set_bytes{{namespace="{ns}"}}'
        out: list[str] = []
        try:
            now, before = evaluator.evaluate(query, at), evaluator.evaluate(query, at - _TREND_S)
        except QueryError:  # pragma: no cover - the query is fixed
            logger.exception("leak oracle query failed")
            return ["the working set could not be read"]
        if not isinstance(now, Vector) or not isinstance(before, Vector):
            return ["the working set could not be read"]
        earlier = {(lb.get("pod"), lb.get("container")): v for lb, v in before.samples}
        prefix = f"{injection.target}-"
        for labels, value in now.samples:
            name = str(labels.get("pod", ""))
            if not name.startswith(prefix):
                continue
            old = earlier.get((labels.get("pod"), labels.get("container")))
            if old is not None and value - old > _LEAK_BYTES:
                out.append(
                    f"Pod/{name}: working set grew {old / _MIB:.0f} → {value / _MIB:.0f} MiB "
                    f"in {_TREND_S:g}s (still leaking)"
                )
        for pod in world.shared.list("Pod", ns):
            if not pod["metadata"]["name"].startswith(prefix):
                continue
            for cs in (pod.get("status") or {}).get("containerStatuses") or []:
                last = (cs.get("lastState") or {}).get("terminated") or {}
                if last.get("reason") == "OOMKilled":
                    out.append(
                        f"Pod/{pod['metadata']['name']}: container {cs['name']} was OOMKilled"
                    )
        return out


class ConfigMapWithoutRestart(Fault):
    id = "configmap-without-restart"
    description = "edit a ConfigMap address read at start; it breaks when the pod is next replaced"
    category = APP_MISCONFIG
    params = (
        Param(
            name="address",
            kind=str,
            help="the new host:port",
            default="the database's Service name with '-v2' appended (a migration not done yet)",
        ),
        Param(
            name="restart_after_s",
            kind=float,
            help="lab seconds from the edit until the target's pod is evicted and replaced",
            default="60",
            minimum=0,
            maximum=86_400,
        ),
    )
    default_targets = targets({"hotel-reservation": "reservation", "online-shop": "cart"})

    def apply(self, ctx: FaultContext) -> None:
        program = ctx.bundle.model.services[ctx.target]
        dep = deployment_of(ctx)
        container = main_container(dep)
        by_env = {str(e.get("name")): e for e in container.get("env") or []}
        found: tuple[str, str, str] | None = None
        # The address it cannot do without first: one it dials at start, then a required one.
        ordered = sorted(program.calls, key=lambda c: (not c.connect_at_start, not c.required))
        for call in ordered:
            if not call.address_env or call.address_env not in by_env:
                continue
            env: dict[str, Any] = by_env[call.address_env]
            ref = (env.get("valueFrom") or {}).get("configMapKeyRef") or {}
            if ref.get("name") and ref.get("key"):
                found = (str(ref["name"]), str(ref["key"]), f"{call.target}:{call.port}")
                break
        if found is None:
            raise BadParameter(
                f"{self.id}: {ctx.target} reads no dependency address from a ConfigMap"
            )
        cm_name, key, fallback = found
        old = str((ctx.get("ConfigMap", cm_name).get("data") or {}).get(key, "")) or fallback
        if "address" not in ctx.params:
            host, _, port = parse_address(old)
            ctx.params["address"] = f"{host}-v2:{port or fallback.rpartition(':')[2]}"
        address = str(ctx.params["address"])
        if address == old:
            raise BadParameter(f"{self.id}: {key} is already {address}")
        delay = float(ctx.params.setdefault("restart_after_s", 60.0))
        if not pods_of(ctx, dep):
            raise BadParameter(f"{self.id}: {ctx.target} has no running pod to replace later")
        ctx.patch(
            "ConfigMap",
            cm_name,
            {"data": {key: address}},
            patch_type="merge",
            change=f"ConfigMap/{cm_name}: data.{key} {old} → {address}",
        )
        ctx.changes.append(
            f"{ctx.target}: its oldest pod is evicted {delay:g}s later (node recycle)"
        )
        world, namespace, deployment = ctx.world, ctx.namespace, dep["metadata"]["name"]

        def evict() -> None:
            # The recycle is what makes the edit bite; once the edit is gone (the lab's reset,
            # or a person who spotted it first) it has nothing to show and is skipped.
            cm = world.api.get("ConfigMap", namespace, cm_name)
            if cm is None or (cm.get("data") or {}).get(key) != address:
                logger.info("configmap-without-restart: %s/%s reverted; no recycle", cm_name, key)
                return
            line = _evict_oldest(world, namespace, deployment)
            logger.info("configmap-without-restart: %s", line or "no pod left to evict")

        timers_for(world.clock).call_at(
            ctx.now + timedelta(seconds=delay), evict, name=f"{self.id} {namespace}/{ctx.target}"
        )

    def recover(self, world: LabWorld, injection: Injection) -> tuple[str, ...]:
        """Put the ConfigMap back, then replace the target's pods so they read the old value
        (deleting them, not a rollout restart: the reset leaves the Deployment as it was)."""
        done = list(super().recover(world, injection))
        pods = _live_pods(world, injection.namespace, injection.target)
        for pod in pods:
            done.append(_evict(world, injection.namespace, pod["metadata"]["name"]))
        return tuple(done)


def _live_pods(world: LabWorld, namespace: str, deployment: str) -> list[JsonObject]:
    dep = world.api.get("Deployment", namespace, deployment)
    if dep is None:
        return []
    match = dep["spec"]["selector"].get("matchLabels") or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(match.items()))
    return [
        p
        for p in world.api.list("Pod", namespace, label_selector=selector)
        if not p["metadata"].get("deletionTimestamp")
    ]


def _evict(world: LabWorld, namespace: str, name: str) -> str:
    try:
        world.api.delete("Pod", namespace, name)
    except ApiError as e:  # gone meanwhile: nothing to evict
        return f"Pod/{name}: {e.message}"
    return f"Pod/{name}: evicted"


def _evict_oldest(world: LabWorld, namespace: str, deployment: str) -> str:
    """Delete the Deployment's oldest live pod, as a node drain's eviction does; its
    ReplicaSet creates a replacement, which reads the ConfigMap as it is now."""
    pods = _live_pods(world, namespace, deployment)
    if not pods:
        return ""
    oldest = min(pods, key=lambda p: str(p["metadata"].get("creationTimestamp", "")))
    return _evict(world, namespace, oldest["metadata"]["name"])
