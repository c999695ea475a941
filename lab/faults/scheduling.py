"""Faults that keep pods off nodes: requests no node can fit, a taint nothing tolerates.

Each is the `kubectl` command an operator runs by mistake; the scheduler then reports why no
node fits ("0/3 nodes are available: 3 Insufficient cpu", "had untolerated taint"), and the
Deployment's rolling update keeps its old pod while the new one stays Pending (a stuck
rollout), unless the old pod goes too (a NoExecute taint evicts it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.model import JsonObject
from lab.faults.base import FIELD_MANAGER, Fault, FaultContext, clean, targets
from lab.faults.errors import BadParameter, InjectionFailed
from lab.faults.kubeops import (
    container_patch,
    deployment_of,
    main_container,
    pods_of,
    rollout_restart,
)
from lab.faults.model import GroundTruth, Injection, Param, SavedObject
from lab.faults.workload import MISCONFIG, OPERATION
from lab.kube import quantity
from lab.kube.errors import ApiError
from lab.kube.jsonutil import rfc3339

if TYPE_CHECKING:
    from lab.sim.world import LabWorld

_RESOURCES = ("cpu", "memory")


def _largest_allocatable(ctx: FaultContext, resource: str) -> int:
    """The most of `resource` (CPU millis or bytes) any node can give one pod."""
    nodes = ctx.api.list("Node", None)
    if not nodes:
        raise BadParameter("the cluster has no nodes")
    values = [((n.get("status") or {}).get("allocatable") or {}).get(resource) for n in nodes]
    if resource == "cpu":
        return max(quantity.millis(v) for v in values)
    return max(quantity.value(v) for v in values)


class RequestsExceedNode(Fault):
    id = "requests-exceed-node"
    description = "raise a CPU or memory request above any node's size; its new pods stay Pending"
    category = MISCONFIG
    params = (
        Param(
            name="resource",
            kind=str,
            help="the request to raise: cpu or memory",
            default="cpu",
        ),
        Param(
            name="amount",
            kind=str,
            help="the new request (a quantity, e.g. 16 or 64Gi)",
            default="twice the largest node's allocatable (a unit typo: 16 cores for 1.6)",
        ),
    )
    default_targets = targets({"hotel-reservation": "rate", "online-shop": "payment"})

    def apply(self, ctx: FaultContext) -> None:
        resource = str(ctx.params.setdefault("resource", "cpu"))
        if resource not in _RESOURCES:
            raise BadParameter(f"parameter resource: {resource!r} is not cpu or memory")
        largest = _largest_allocatable(ctx, resource)
        if "amount" not in ctx.params:
            ctx.params["amount"] = (
                f"{2 * largest // 1000}" if resource == "cpu" else f"{2 * largest // 2**30}Gi"
            )
        amount = str(ctx.params["amount"])
        if not quantity.is_valid(amount):
            raise BadParameter(f"parameter amount: {amount!r} is not a quantity")
        wanted = quantity.millis(amount) if resource == "cpu" else quantity.value(amount)
        if wanted <= largest:
            raise BadParameter(f"parameter amount: {amount} fits on a node; raise it further")
        dep = deployment_of(ctx)
        container = main_container(dep)
        resources = container.get("resources") or {}
        patch: dict[str, dict[str, str]] = {"requests": {resource: amount}}
        limit = (resources.get("limits") or {}).get(resource)
        if limit is not None:
            # `kubectl set resources --requests=... --limits=...`: a request above the limit
            # is refused by the API server, so whoever raised one raised both.
            patch["limits"] = {resource: amount}
        old = (resources.get("requests") or {}).get(resource, "none")
        name = dep["metadata"]["name"]
        ctx.patch(
            "Deployment",
            name,
            container_patch(container["name"], resources=patch),
            patch_type="strategic",
            change=(
                f"Deployment/{name}: container {container['name']} {resource} request "
                f"{old} → {amount}"
            ),
        )


class NodeTaintNoToleration(Fault):
    id = "node-taint-no-toleration"
    description = "taint every node, restart a workload: new pods Pending (no undoable fix)"
    category = MISCONFIG
    # The fix is `kubectl taint nodes --all key-`: a Node write outside Stratus's vocabulary
    # (it cordons and uncordons, nothing else), so the honest answer is an escalation.
    undoable_fix = False
    params = (
        Param(name="key", kind=str, help="the taint's key", default="dedicated"),
        Param(name="value", kind=str, help="the taint's value", default="batch"),
        Param(
            name="effect",
            kind=str,
            help="NoSchedule (new pods only) or NoExecute (running pods are evicted too)",
            default="NoSchedule",
        ),
    )
    default_targets = targets({"hotel-reservation": "profile", "online-shop": "currency"})

    def apply(self, ctx: FaultContext) -> None:
        key = str(ctx.params.setdefault("key", "dedicated"))
        value = str(ctx.params.setdefault("value", "batch"))
        effect = str(ctx.params.setdefault("effect", "NoSchedule"))
        if effect not in ("NoSchedule", "NoExecute"):
            raise BadParameter(f"parameter effect: {effect!r} is not NoSchedule or NoExecute")
        dep = deployment_of(ctx)
        taint: JsonObject = {"key": key, "value": value, "effect": effect}
        if effect == "NoExecute":
            # kubectl stamps NoExecute taints: eviction deadlines count from it.
            taint["timeAdded"] = rfc3339(ctx.now)
        # Meant for a node pool, typed with --all: every node gets it.
        for node in sorted(n["metadata"]["name"] for n in ctx.api.list("Node", None)):
            _taint(ctx, node, taint)
        if effect == "NoSchedule":
            # Running pods stay where they are; the next restart of the workload is what
            # needs a node (a routine restart, as in the quota fault).
            rollout_restart(ctx, dep["metadata"]["name"])


def _taint(ctx: FaultContext, node: str, taint: JsonObject) -> None:
    """`kubectl taint nodes NODE key=value:Effect` (a patch adding one taint)."""
    live = ctx.api.get("Node", None, node)
    if live is None:
        raise BadParameter(f"Node {node} does not exist")
    taints = list((live.get("spec") or {}).get("taints") or [])
    if any(t.get("key") == taint["key"] and t.get("effect") == taint["effect"] for t in taints):
        raise BadParameter(f"Node {node} already has a {taint['key']}:{taint['effect']} taint")
    # FaultContext.patch is namespaced; a Node is not, so save and write it here.
    if not any(s.kind == "Node" and s.name == node for s in ctx.saved):
        ctx.saved.append(SavedObject(kind="Node", namespace="", name=node, before=clean(live)))
    try:
        ctx.api.patch(
            "Node",
            None,
            node,
            {"spec": {"taints": [*taints, taint]}},
            patch_type="merge",
            field_manager=FIELD_MANAGER,
        )
    except ApiError as e:
        raise InjectionFailed(f"Node/{node}: {e.message}") from e
    ctx.changes.append(f"Node/{node}: taint {taint['key']}={taint['value']}:{taint['effect']}")


LIMIT_RANGE_NAME = "container-limits"


class LimitRangeTooLow(Fault):
    id = "limitrange-too-low"
    description = "create a LimitRange whose max memory is below a workload's limit, delete its pod"
    category = MISCONFIG
    # The fix is deleting or raising the LimitRange: not a kind Stratus writes (and lowering
    # the workload's limit under it would trade the refusal for OOM kills).
    undoable_fix = False
    params = (
        Param(
            name="memory",
            kind=str,
            help="the LimitRange's max memory per container (a quantity)",
            default="half the target container's memory limit",
        ),
    )
    default_targets = targets({"hotel-reservation": "mongodb-rate", "online-shop": "ad"})

    def apply(self, ctx: FaultContext) -> None:
        if ctx.api.get("LimitRange", ctx.namespace, LIMIT_RANGE_NAME) is not None:
            raise BadParameter(f"{self.id}: LimitRange {LIMIT_RANGE_NAME} already exists")
        dep = deployment_of(ctx)
        limit = ((main_container(dep).get("resources") or {}).get("limits") or {}).get("memory")
        if limit is None:
            raise BadParameter(f"{ctx.target} sets no memory limit for a max to refuse")
        if "memory" not in ctx.params:
            ctx.params["memory"] = quantity.format_bytes(quantity.value(limit) // 2)
        memory = str(ctx.params["memory"])
        if not quantity.is_valid(memory) or quantity.value(memory) <= 0:
            raise BadParameter(f"parameter memory: {memory!r} is not a positive quantity")
        if quantity.value(memory) >= quantity.value(limit):
            raise BadParameter(f"parameter memory: {ctx.target}'s limit {limit} fits under it")
        ctx.create(
            {
                "apiVersion": "v1",
                "kind": "LimitRange",
                "metadata": {"name": LIMIT_RANGE_NAME},
                "spec": {"limits": [{"type": "Container", "max": {"memory": memory}}]},
            },
            change=f"LimitRange/{LIMIT_RANGE_NAME}: created with max memory {memory} per Container",
        )
        # Admission only judges new pods: the LimitRange bites when the workload's pod is
        # next recreated (here `kubectl delete pod`, as a drain or a clean-up would).
        for pod in pods_of(ctx, dep):
            name = pod["metadata"]["name"]
            ctx.api.delete("Pod", ctx.namespace, name)
            ctx.changes.append(f"Pod/{name}: deleted")


class PvcPending(Fault):
    id = "pvc-pending"
    description = "mount a new PVC whose storage class does not exist; the new pod stays Pending"
    category = MISCONFIG
    params = (
        Param(
            name="storage_class",
            kind=str,
            help="the storageClassName the claim asks for",
            default="fast",
        ),
        Param(name="size", kind=str, help="the claim's size", default="1Gi"),
    )
    default_targets = targets({"hotel-reservation": "recommendation", "online-shop": "cart"})

    def apply(self, ctx: FaultContext) -> None:
        storage_class = str(ctx.params.setdefault("storage_class", "fast"))
        size = str(ctx.params.setdefault("size", "1Gi"))
        if not quantity.is_valid(size) or quantity.value(size) <= 0:
            raise BadParameter(f"parameter size: {size!r} is not a positive quantity")
        dep = deployment_of(ctx)
        name = dep["metadata"]["name"]
        claim = f"{name}-cache"
        if ctx.api.get("PersistentVolumeClaim", ctx.namespace, claim) is not None:
            raise BadParameter(f"{self.id}: PersistentVolumeClaim {claim} already exists")
        # `kubectl apply` of a manifest change that adds a cache volume: the claim (with the
        # class of another cluster, where it exists) and the Deployment that mounts it.
        ctx.create(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": storage_class,
                    "resources": {"requests": {"storage": size}},
                },
            },
            change=f"PersistentVolumeClaim/{claim}: created with storageClassName {storage_class}",
        )
        container = main_container(dep)["name"]
        volume = {"name": "cache", "persistentVolumeClaim": {"claimName": claim}}
        mount = {"name": "cache", "mountPath": "/var/cache/app"}
        ctx.patch(
            "Deployment",
            name,
            {
                "spec": {
                    "template": {
                        "spec": {
                            "volumes": [volume],
                            "containers": [{"name": container, "volumeMounts": [mount]}],
                        }
                    }
                }
            },
            patch_type="strategic",
            change=f"Deployment/{name}: volume cache (claim {claim}) mounted at /var/cache/app",
        )


class NodeNotReady(Fault):
    id = "node-not-ready"
    description = "the kubelet of a workload's node stops posting status; the node goes NotReady"
    # An operation failure of the platform (a kubelet or machine down), not a spec mistake:
    # the taxonomy's virtualization level, as for a pod killed without a spec change.
    category = OPERATION
    # A person brings the node (or its kubelet) back, or drains it: not a Kubernetes object
    # Stratus can put back.
    undoable_fix = False
    params = (
        Param(
            name="node",
            kind=str,
            help="the node to fail",
            default="the node the target's first pod runs on",
        ),
    )
    default_targets = targets(
        {"hotel-reservation": "mongodb-profile", "online-shop": "valkey-cart"}
    )

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        if "node" not in ctx.params:
            placed = sorted(
                str(p["spec"]["nodeName"]) for p in pods_of(ctx, dep) if p["spec"].get("nodeName")
            )
            if not placed:
                raise BadParameter(f"{ctx.target} has no pod on a node")
            ctx.params["node"] = placed[0]
        node = str(ctx.params["node"])
        live = ctx.api.get("Node", None, node)
        if live is None:
            raise BadParameter(f"parameter node: Node {node} does not exist")
        ctx.saved.append(SavedObject(kind="Node", namespace="", name=node, before=clean(live)))
        # What the node lifecycle controller writes once the kubelet has been silent for the
        # grace period: every condition Unknown, "Kubelet stopped posting node status."
        stamp = rfc3339(ctx.now)
        conditions = [
            {
                **c,
                "status": "Unknown",
                "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status.",
                "lastTransitionTime": stamp,
            }
            for c in (live.get("status") or {}).get("conditions") or []
        ]
        try:
            ctx.world.api.patch(  # type: ignore[call-arg]
                "Node",
                None,
                node,
                {"status": {"conditions": conditions}},
                patch_type="merge",
                field_manager="node-controller",
                subresource="status",
            )
        except ApiError as e:
            raise InjectionFailed(f"Node/{node}: {e.message}") from e
        ctx.changes.append(f"Node/{node}: kubelet stopped posting status (Ready=Unknown)")

    def truth(self, ctx: FaultContext) -> GroundTruth:
        # Every service with a pod on the failed node is down for the same reason; the
        # target (whose node was chosen) first. Read at injection: nothing has moved yet.
        on_node = _services_on(ctx, str(ctx.params["node"]))
        causes = (ctx.target, *(s for s in on_node if s != ctx.target))
        return GroundTruth(
            namespace=ctx.namespace,
            root_causes=causes,
            category=OPERATION,
            undoable_fix=False,
        )

    def recover(self, world: LabWorld, injection: Injection) -> tuple[str, ...]:
        """The kubelet posts again: Ready=True (the node lifecycle controller lifts its taints
        and the kubelet finishes the pods deleted meanwhile)."""
        done: list[str] = []
        stamp = rfc3339(world.clock.now())
        for saved in injection.saved:
            live = world.api.get("Node", None, saved.name)
            if live is None:
                continue
            conditions = [
                {**c, **_HEALTHY.get(c.get("type", ""), {}), "lastTransitionTime": stamp}
                for c in (live.get("status") or {}).get("conditions") or []
            ]
            world.api.patch(  # type: ignore[call-arg]
                "Node",
                None,
                saved.name,
                {"status": {"conditions": conditions}},
                patch_type="merge",
                field_manager="kubelet",
                subresource="status",
            )
            done.append(f"Node/{saved.name}: Ready again")
        return tuple(done)


#: What a healthy kubelet posts for each node condition.
_HEALTHY: dict[str, dict[str, str]] = {
    "Ready": {
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status",
    },
    "MemoryPressure": {
        "status": "False",
        "reason": "KubeletHasSufficientMemory",
        "message": "kubelet has sufficient memory available",
    },
    "DiskPressure": {
        "status": "False",
        "reason": "KubeletHasNoDiskPressure",
        "message": "kubelet has no disk pressure",
    },
    "PIDPressure": {
        "status": "False",
        "reason": "KubeletHasSufficientPID",
        "message": "kubelet has sufficient PID available",
    },
}


def _services_on(ctx: FaultContext, node: str) -> tuple[str, ...]:
    """The services whose every pod is on `node`: the ones its failure takes down (one with
    a replica elsewhere keeps serving)."""
    label = ctx.bundle.model.service_label
    where: dict[str, set[str]] = {}
    for p in ctx.api.list("Pod", ctx.namespace):
        service = ((p.get("metadata") or {}).get("labels") or {}).get(label)
        if service in ctx.bundle.model.services and not p["metadata"].get("deletionTimestamp"):
            where.setdefault(str(service), set()).add(str((p.get("spec") or {}).get("nodeName")))
    return tuple(sorted(s for s, nodes in where.items() if nodes == {node}))
