"""Faults that are an edit of a Deployment's spec: replicas, scheduling constraints, resources.

Each is one `kubectl` command an operator might run by mistake; the Deployment controller,
scheduler and kubelet then do what they always do. A rolling update keeps the old pod while
the new one cannot become available (`maxUnavailable` rounds down to 0 for one replica), so a
bad template often shows as a stuck rollout rather than an outage: that is what a real cluster
does too, and the mitigation oracle counts a stuck rollout as not mitigated.
"""

from __future__ import annotations

from agents.model import Category, FaultLevel, FaultType
from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.kubeops import container_patch, deployment_of, main_container
from lab.faults.model import Param
from lab.kube import quantity

MISCONFIG = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.MISCONFIGURATION)
OPERATION = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.OPERATION_ERROR)

_MIB = 1024 * 1024


class ScaleToZero(Fault):
    id = "scale-to-zero"
    description = "kubectl scale a workload to 0 replicas; its callers' requests fail"
    category = OPERATION
    params = (
        Param(name="replicas", kind=int, help="replicas to scale to", default="0", minimum=0),
    )
    default_targets = targets({"hotel-reservation": "geo", "online-shop": "cart"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        replicas = int(ctx.params.setdefault("replicas", 0))
        name = dep["metadata"]["name"]
        old = dep["spec"].get("replicas", 1)
        if replicas >= old:
            raise BadParameter(f"{self.id}: {name} runs {old} replicas; scale below that")
        ctx.patch(
            "Deployment",
            name,
            {"spec": {"replicas": replicas}},
            patch_type="merge",
            change=f"Deployment/{name}: spec.replicas {old} → {replicas}",
        )


class NodeSelectorMismatch(Fault):
    id = "node-selector-mismatch"
    description = "pin a workload to a node that does not exist; its new pods stay Pending"
    category = MISCONFIG
    params = (
        Param(
            name="node", kind=str, help="kubernetes.io/hostname to require", default="extra-node"
        ),
    )
    default_targets = targets({"hotel-reservation": "reservation", "online-shop": "shipping"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        node = str(ctx.params.setdefault("node", "extra-node"))
        name = dep["metadata"]["name"]
        ctx.patch(
            "Deployment",
            name,
            {"spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/hostname": node}}}}},
            patch_type="strategic",
            change=(
                f"Deployment/{name}: spec.template.spec.nodeSelector = "
                f"{{kubernetes.io/hostname: {node}}}"
            ),
        )


def _current_usage(ctx: FaultContext) -> tuple[float, int]:
    """(CPU millis, working-set bytes) of the target's busiest pod right now."""
    pods = [p for p in ctx.world.snapshot(ctx.namespace).pods.values() if p.workload == ctx.target]
    if not pods:
        raise BadParameter(f"{ctx.target} has no running pod to size the limit from")
    return max(p.cpu_millis for p in pods), max(p.memory_bytes for p in pods)


def _working_set_soon_after_ready(ctx: FaultContext) -> int:
    """What a fresh container of the target uses 1.5 s after it turns ready, at today's load:
    a limit there lets the rollout go through and then OOM-kills the new pod, which is how
    a too-low limit usually shows up (a container that cannot even start looks different)."""
    program = ctx.bundle.model.services[ctx.target]
    snap = ctx.world.snapshot(ctx.namespace)
    pods = sum(1 for p in snap.pods.values() if p.workload == ctx.target) or 1
    served = snap.services.get(ctx.target)
    rps = (served.served_rate if served is not None else 0.0) / pods
    memory = program.memory
    uptime = program.startup_s + 1.5
    warm = 1.0 if memory.warmup_s <= 0 else min(1.0, uptime / memory.warmup_s)
    return int(memory.base_mib * _MIB * (0.25 + 0.75 * warm) + memory.per_rps_kib * 1024 * rps)


class MemoryLimitTooLow(Fault):
    id = "memory-limit-too-low"
    description = "set a memory limit below the working set; the container is OOMKilled"
    category = MISCONFIG
    params = (
        Param(
            name="memory",
            kind=str,
            help="the new memory limit (a quantity, e.g. 48Mi)",
            default="what it grows to 1.5 s after it becomes ready (it OOMs soon after)",
        ),
    )
    default_targets = targets({"hotel-reservation": "mongodb-geo", "online-shop": "cart"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        container = main_container(dep)
        if "memory" not in ctx.params:
            ctx.params["memory"] = f"{max(8, _working_set_soon_after_ready(ctx) // _MIB)}Mi"
        limit = str(ctx.params["memory"])
        if not quantity.is_valid(limit) or quantity.value(limit) <= 0:
            raise BadParameter(f"parameter memory: {limit!r} is not a positive quantity")
        resources = container.get("resources") or {}
        request = (resources.get("requests") or {}).get("memory")
        patch: dict[str, dict[str, str]] = {"limits": {"memory": limit}}
        if request is not None and quantity.value(request) > quantity.value(limit):
            patch["requests"] = {"memory": limit}  # the server refuses requests above limits
        old = (resources.get("limits") or {}).get("memory", "none")
        name = dep["metadata"]["name"]
        ctx.patch(
            "Deployment",
            name,
            container_patch(container["name"], resources=patch),
            patch_type="strategic",
            change=(
                f"Deployment/{name}: container {container['name']} memory limit {old} → {limit}"
            ),
        )


class CpuLimitTooLow(Fault):
    id = "cpu-limit-too-low"
    description = "set a CPU limit far below demand; throttling makes requests slow"
    category = MISCONFIG
    params = (
        Param(
            name="cpu",
            kind=str,
            help="the new CPU limit (a quantity, e.g. 5m)",
            default="a third of the container's current CPU use",
        ),
    )
    default_targets = targets({"hotel-reservation": "geo", "online-shop": "currency"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        container = main_container(dep)
        if "cpu" not in ctx.params:
            millis, _ = _current_usage(ctx)
            ctx.params["cpu"] = f"{max(1, int(millis / 3))}m"
        limit = str(ctx.params["cpu"])
        if not quantity.is_valid(limit) or quantity.millis(limit) <= 0:
            raise BadParameter(f"parameter cpu: {limit!r} is not a positive quantity")
        resources = container.get("resources") or {}
        request = (resources.get("requests") or {}).get("cpu")
        patch: dict[str, dict[str, str]] = {"limits": {"cpu": limit}}
        if request is not None and quantity.millis(request) > quantity.millis(limit):
            patch["requests"] = {"cpu": limit}
        old = (resources.get("limits") or {}).get("cpu", "none")
        name = dep["metadata"]["name"]
        ctx.patch(
            "Deployment",
            name,
            container_patch(container["name"], resources=patch),
            patch_type="strategic",
            change=f"Deployment/{name}: container {container['name']} CPU limit {old} → {limit}",
        )
