"""Background noise: what a healthy cluster shows that must neither open an incident nor point
a diagnosis at the wrong service.

Each kind acts the way its real counterpart does: `kubectl delete pod`, `kubectl rollout
restart`, `kubectl set image` to a tag that works, the kubelet's Warning events, `kubectl
cordon`/`uncordon`, a short network slowdown below the SLO. Spec changes carry the `kubectl`
field manager, so the change journal records them as it would a colleague's command. Nothing
here breaks the app: a noise step that would (a tag the registry lacks or that panics, a node
that does not exist) is refused as a scenario error instead of run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from agents.model import JsonObject
from lab.bench.errors import ScenarioRunError
from lab.bench.scenario import (
    ConfigEdit,
    CordonNode,
    DeletePod,
    NetworkBlip,
    RolloutRestart,
    ScaleUp,
    SetImage,
    WarningEvent,
)
from lab.faults.base import FaultContext
from lab.faults.errors import FaultError
from lab.faults.kubeops import (
    container_patch,
    deployment_of,
    main_container,
    pods_of,
    rollout_restart,
)
from lab.kube.errors import ApiError
from lab.sim.images import parse_image

if TYPE_CHECKING:
    from lab.sim.world import LabWorld

logger = logging.getLogger(__name__)

NoiseStep = (
    DeletePod
    | RolloutRestart
    | SetImage
    | WarningEvent
    | CordonNode
    | NetworkBlip
    | ScaleUp
    | ConfigEdit
)

FIELD_MANAGER = "kubectl"


#: `later(delay_s, callback, name)`: run `callback` `delay_s` lab seconds from now.
Later = Callable[[float, Callable[[], None], str], None]


def apply_noise(world: LabWorld, app: str, step: NoiseStep, later: Later) -> str:
    """Do `step` now (`later` schedules what it undoes itself, like an uncordon); returns the
    line that says what was done. Raises `ScenarioRunError` when the step cannot be done
    harmlessly."""
    handlers: dict[str, Callable[[LabWorld, FaultContext, NoiseStep, Later], str]] = {
        "delete-pod": _delete_pod,
        "rollout-restart": _rollout_restart,
        "set-image": _set_image,
        "warning-event": _warning_event,
        "cordon-node": _cordon_node,
        "network-blip": _network_blip,
        "scale": _scale_up,
        "config-edit": _config_edit,
    }
    bundle = next(b for b in world.bundles if b.name == app)
    ctx = FaultContext(
        world=world,
        bundle=bundle,
        target=str(getattr(step, "target", "")),
        params={},
        now=world.clock.now(),
    )
    try:
        line = handlers[step.kind](world, ctx, step, later)
    except (FaultError, ApiError) as e:
        raise ScenarioRunError(f"noise {step.kind} on {ctx.target or '-'}: {e}") from e
    logger.info("noise at %s: %s", ctx.now, line)
    return line


def _healthy_pods(ctx: FaultContext) -> list[JsonObject]:
    def ready(pod: JsonObject) -> bool:
        conditions = (pod.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    pods = sorted(pods_of(ctx, deployment_of(ctx)), key=lambda p: str(p["metadata"]["name"]))
    return [p for p in pods if ready(p)]


def _delete_pod(world: LabWorld, ctx: FaultContext, step: NoiseStep, later: Later) -> str:
    pods = _healthy_pods(ctx)
    if not pods:
        return f"delete-pod {ctx.target}: no Ready pod to delete (skipped)"
    name = str(pods[0]["metadata"]["name"])
    world.api.delete("Pod", ctx.namespace, name)
    return f"Pod/{name} deleted (kubectl delete pod)"


def _rollout_restart(world: LabWorld, ctx: FaultContext, step: NoiseStep, later: Later) -> str:
    name = str(deployment_of(ctx)["metadata"]["name"])
    rollout_restart(ctx, name)
    return ctx.changes[-1]


def _set_image(world: LabWorld, ctx: FaultContext, step: NoiseStep, later: Later) -> str:
    assert isinstance(step, SetImage)
    dep = deployment_of(ctx)
    container = main_container(dep)
    old = str(container.get("image", ""))
    repository = parse_image(old).repository
    image = f"{repository}:{step.tag}"
    spec = world.registry.get(image)
    if spec is None or spec.panic:
        why = "the registry does not have it" if spec is None else "that build panics"
        raise ScenarioRunError(f"noise set-image {image}: {why}; noise must be harmless")
    name = str(dep["metadata"]["name"])
    ctx.patch(
        "Deployment",
        name,
        container_patch(str(container["name"]), image=image),
        patch_type="strategic",
        change=f"Deployment/{name}: image {old} → {image} (kubectl set image)",
    )
    return ctx.changes[-1]


def _warning_event(world: LabWorld, ctx: FaultContext, step: NoiseStep, later: Later) -> str:
    assert isinstance(step, WarningEvent)
    pods = _healthy_pods(ctx)
    involved = pods[0] if pods else deployment_of(ctx)
    for _ in range(step.count):
        world.api.record_event(
            involved=involved,
            reason=step.reason,
            message=step.message,
            type="Warning",
            component="kubelet",
        )
    kind = str(involved.get("kind", "Pod"))
    return f"Warning {step.reason} on {kind}/{involved['metadata']['name']} (x{step.count})"


def _cordon(world: LabWorld, node: str, unschedulable: bool) -> None:
    world.api.patch(
        "Node",
        None,
        node,
        {"spec": {"unschedulable": unschedulable or None}},
        patch_type="merge",
        field_manager=FIELD_MANAGER,
    )


def _cordon_node(world: LabWorld, ctx: FaultContext, step: NoiseStep, later: Later) -> str:
    assert isinstance(step, CordonNode)
    if world.api.get("Node", None, step.node) is None:
        nodes = ", ".join(n["metadata"]["name"] for n in world.api.list("Node"))
        raise ScenarioRunError(f"noise cordon-node: no node {step.node!r} (nodes: {nodes})")
    _cordon(world, step.node, True)
    node = step.node

    def uncordon() -> None:
        _cordon(world, node, False)
        logger.info("noise: node %s uncordoned", node)

    later(step.duration, uncordon, f"uncordon {node}")
    return f"Node/{node} cordoned for {step.duration:g}s (kubectl cordon)"


def _network_blip(world: LabWorld, ctx: FaultContext, step: NoiseStep, later: Later) -> str:
    assert isinstance(step, NetworkBlip)
    world.dataplane.set_network(
        ctx.namespace,
        ctx.target,
        delay_ms=step.delay_ms,
        until=ctx.now + timedelta(seconds=step.duration),
    )
    return f"network into {ctx.target}: +{step.delay_ms:g} ms for {step.duration:g}s"


def _scale_up(world: LabWorld, ctx: FaultContext, step: NoiseStep, later: Later) -> str:
    assert isinstance(step, ScaleUp)
    dep = deployment_of(ctx)
    name = str(dep["metadata"]["name"])
    old = int(dep["spec"].get("replicas", 1))
    if step.replicas < old:
        raise ScenarioRunError(
            f"noise scale {name}: {old} → {step.replicas} lowers capacity; noise must be harmless"
        )
    ctx.patch(
        "Deployment",
        name,
        {"spec": {"replicas": step.replicas}},
        patch_type="merge",
        change=f"Deployment/{name}: spec.replicas {old} → {step.replicas} (kubectl scale)",
    )
    return ctx.changes[-1]


def _config_edit(world: LabWorld, ctx: FaultContext, step: NoiseStep, later: Later) -> str:
    assert isinstance(step, ConfigEdit)
    cm = world.api.get("ConfigMap", ctx.namespace, step.config_map)
    if cm is None:
        raise ScenarioRunError(f"noise config-edit: no ConfigMap {step.config_map!r}")
    readers = _readers(world, ctx.namespace, step.config_map, step.key)
    if readers:
        raise ScenarioRunError(
            f"noise config-edit {step.config_map}/{step.key}: read by "
            f"{', '.join(sorted(readers))}; noise must be harmless"
        )
    old = (cm.get("data") or {}).get(step.key)
    ctx.patch(
        "ConfigMap",
        step.config_map,
        {"data": {step.key: step.value}},
        patch_type="merge",
        change=f"ConfigMap/{step.config_map}: data.{step.key} {old!r} → {step.value!r} "
        "(kubectl patch)",
    )
    return ctx.changes[-1]


def _readers(world: LabWorld, namespace: str, config_map: str, key: str) -> set[str]:
    """Workloads whose containers read `key` of the ConfigMap, or all of it."""
    out: set[str] = set()
    for kind in ("Deployment", "StatefulSet"):
        for obj in world.api.list(kind, namespace):
            pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
            mounted = any(
                (v.get("configMap") or {}).get("name") == config_map
                for v in pod.get("volumes") or []
            )
            for c in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
                whole = any(
                    (e.get("configMapRef") or {}).get("name") == config_map
                    for e in c.get("envFrom") or []
                )
                one = any(
                    ((e.get("valueFrom") or {}).get("configMapKeyRef") or {}).get("name")
                    == config_map
                    and e["valueFrom"]["configMapKeyRef"].get("key") == key
                    for e in c.get("env") or []
                )
                if mounted or whole or one:
                    out.add(f"{kind}/{obj['metadata']['name']}")
    return out
