"""Faults that misconfigure what a Kubernetes controller does for a workload: an autoscaler
capped below the replicas the service runs, a rollout that cannot progress.

The injector writes the object an operator would (`kubectl autoscale`, `kubectl apply` of an
edited manifest); the HPA and Deployment controllers then do what they always do. Whether a
user sees anything follows from the cluster's state: the lab's load fits in one frontend
replica, so a capped autoscaler costs spare capacity and nothing a caller sees, while a
rollout allowed to take a replica down while its new pods never turn Ready loses serving
capacity for as long as it is stuck.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from agents.model import JsonObject
from lab.faults.base import FIELD_MANAGER, RECOVER_MANAGER, Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.kubeops import container_patch, deployment_of, main_container, pods_of
from lab.faults.model import Injection, Param
from lab.faults.rollout import APP_MISCONFIG
from lab.faults.workload import MISCONFIG
from lab.kube.controllers import disruption
from lab.kube.errors import TooManyRequests
from lab.sim.images import resolve_exec

if TYPE_CHECKING:
    from lab.sim.world import LabWorld


def _replicas(dep: JsonObject) -> int:
    return int((dep.get("spec") or {}).get("replicas", 1))


class HpaMaxTooLow(Fault):
    id = "hpa-max-too-low"
    description = (
        "kubectl autoscale a workload with --max below its replicas; the HPA scales it down"
    )
    category = MISCONFIG
    params = (
        Param(
            name="max",
            kind=int,
            help="the HPA's maxReplicas (minReplicas is 1, kubectl autoscale's default)",
            default="1",
            minimum=1,
        ),
    )
    default_targets = targets({"hotel-reservation": "frontend", "online-shop": "frontend"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        name = dep["metadata"]["name"]
        if ctx.api.get("HorizontalPodAutoscaler", ctx.namespace, name) is not None:
            raise BadParameter(f"{self.id}: HorizontalPodAutoscaler {name} already exists")
        high = int(ctx.params.setdefault("max", 1))
        current = _replicas(dep)
        if high >= current:
            raise BadParameter(f"{self.id}: {name} runs {current} replicas; cap below that")
        # What `kubectl autoscale deployment/NAME --max=N --cpu-percent=80` creates.
        ctx.create(
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": name},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                    "minReplicas": 1,
                    "maxReplicas": high,
                    "metrics": [
                        {
                            "type": "Resource",
                            "resource": {
                                "name": "cpu",
                                "target": {"type": "Utilization", "averageUtilization": 80},
                            },
                        }
                    ],
                },
            },
            change=(
                f"HorizontalPodAutoscaler/{name}: created for Deployment/{name} "
                f"(min 1, max {high}; the Deployment runs {current})"
            ),
        )

    def recover(self, world: LabWorld, injection: Injection) -> tuple[str, ...]:
        """Delete the HPA, then give the Deployment back the replicas the HPA took away (the
        controller wrote them, so no saved object of the injector holds them)."""
        done = list(super().recover(world, injection))
        key = f"Deployment/{injection.target}"
        replicas = injection.baseline.workloads.get(key)
        dep = world.api.get("Deployment", injection.namespace, injection.target)
        if replicas is not None and dep is not None and _replicas(dep) != replicas:
            world.api.patch(
                "Deployment",
                injection.namespace,
                injection.target,
                {"spec": {"replicas": replicas}},
                patch_type="merge",
                field_manager=RECOVER_MANAGER,
            )
            done.append(f"{key}: scaled back to {replicas}")
        return tuple(done)


class RolloutStuckProgressDeadline(Fault):
    id = "rollout-stuck-progress-deadline"
    description = (
        "roll out a readiness probe on a closed port, maxUnavailable 1: stuck a replica down"
    )
    category = MISCONFIG
    params = (
        Param(
            name="probe_port",
            kind=int,
            help="the port the new readiness probe checks",
            default="the container's port + 1 (a health port the binary does not open)",
            minimum=1,
        ),
        Param(
            name="deadline",
            kind=int,
            help="spec.progressDeadlineSeconds",
            default="60",
            minimum=1,
        ),
    )
    default_targets = targets({"hotel-reservation": "frontend", "online-shop": "frontend"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        name = dep["metadata"]["name"]
        container = main_container(dep)
        if _replicas(dep) < 2:
            # With one replica maxUnavailable cannot take the only pod down while the new one
            # is unready; the rollout stalls with no capacity lost (nothing a user sees).
            raise BadParameter(f"{self.id}: {name} runs fewer than 2 replicas")
        ports = [int(p["containerPort"]) for p in container.get("ports") or []]
        if "probe_port" not in ctx.params:
            if not ports:
                raise BadParameter(f"{self.id}: {name} declares no container port")
            ctx.params["probe_port"] = ports[0] + 1
        probe_port = int(ctx.params["probe_port"])
        if probe_port in ports:
            raise BadParameter(f"{self.id}: {name} listens on {probe_port}; pick another port")
        deadline = int(ctx.params.setdefault("deadline", 60))
        probe = {"tcpSocket": {"port": probe_port}, "initialDelaySeconds": 1, "periodSeconds": 5}
        patch = container_patch(container["name"], readinessProbe=probe)
        patch["spec"]["progressDeadlineSeconds"] = deadline
        patch["spec"]["strategy"] = {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1},
        }
        ctx.patch(
            "Deployment",
            name,
            patch,
            patch_type="strategic",
            change=(
                f"Deployment/{name}: container {container['name']} readinessProbe "
                f"tcpSocket:{probe_port}, strategy maxUnavailable 1, "
                f"progressDeadlineSeconds {deadline}"
            ),
        )


class PdbBlocksDrain(Fault):
    id = "pdb-blocks-drain"
    description = "a PodDisruptionBudget at the replica count, then kubectl drain: the drain stalls"
    # Stratus cannot write a PodDisruptionBudget (nor finish a drain): relaxing the budget or
    # scaling for the maintenance is a person's call.
    category = MISCONFIG
    undoable_fix = False
    default_targets = targets({"hotel-reservation": "frontend", "online-shop": "frontend"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        name = dep["metadata"]["name"]
        if ctx.api.get("PodDisruptionBudget", ctx.namespace, name) is not None:
            raise BadParameter(f"{self.id}: PodDisruptionBudget {name} already exists")
        pods = pods_of(ctx, dep)
        nodes = sorted({str(p["spec"].get("nodeName")) for p in pods if p["spec"].get("nodeName")})
        if not nodes:
            raise BadParameter(f"{self.id}: {name} has no scheduled pod to drain a node under")
        replicas = _replicas(dep)
        ctx.create(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name},
                "spec": {"minAvailable": replicas, "selector": dep["spec"]["selector"]},
            },
            change=f"PodDisruptionBudget/{name}: created with minAvailable {replicas} "
            f"(the Deployment runs {replicas})",
        )
        node = nodes[0]
        ctx.params["node"] = node
        ctx.world.api.patch(
            "Node",
            None,
            node,
            {"spec": {"unschedulable": True}},
            patch_type="strategic",
            field_manager=FIELD_MANAGER,
        )
        ctx.changes.append(f"Node/{node}: cordoned (kubectl drain)")
        # kubectl drain evicts every pod on the node; the budget refuses its own pods (429),
        # which kubectl reports and keeps retrying, so the node never empties.
        api = ctx.world.cluster.api
        refused = []
        for pod in ctx.api.list("Pod", None):
            if pod["spec"].get("nodeName") != node or pod["metadata"].get("deletionTimestamp"):
                continue
            if any(
                o.get("kind") == "DaemonSet" for o in pod["metadata"].get("ownerReferences") or []
            ):
                continue  # --ignore-daemonsets
            meta = pod["metadata"]
            try:
                disruption.evict(api, meta["namespace"], meta["name"], ctx.now)
            except TooManyRequests:
                refused.append(meta["name"])
        ctx.changes.append(
            f"kubectl drain {node}: evicting pod(s) {', '.join(refused)} refused: Cannot evict "
            "pod as it would violate the pod's disruption budget"
        )

    def recover(self, world: LabWorld, injection: Injection) -> tuple[str, ...]:
        """Delete the budget and uncordon the node (the drain is abandoned)."""
        done = list(super().recover(world, injection))
        node = str(injection.params.get("node", ""))
        if node and world.api.get("Node", None, node) is not None:
            world.api.patch(
                "Node",
                None,
                node,
                {"spec": {"unschedulable": None}},
                patch_type="merge",
                field_manager=RECOVER_MANAGER,
            )
            done.append(f"Node/{node}: uncordoned")
        return tuple(done)


class JobKeepsFailing(Fault):
    id = "job-keeps-failing"
    description = (
        "kubectl create job from a service's image with a command it lacks: BackoffLimitExceeded"
    )
    # A Job's pod template is immutable and Stratus writes no Jobs: a person fixes the command
    # and re-creates the Job.
    category = APP_MISCONFIG
    undoable_fix = False
    params = (
        Param(
            name="command",
            kind=str,
            help="the Job's command (split like a shell would); the image must lack it",
            default="migrate (a schema-migration tool the service's image does not ship)",
        ),
    )
    default_targets = targets({"hotel-reservation": "geo", "online-shop": "cart"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        container = main_container(dep)
        image_ref = str(container.get("image", ""))
        image = ctx.world.registry.get(image_ref)
        if image is None:
            raise BadParameter(f"{self.id}: the target's image is not in the registry")
        command = shlex.split(str(ctx.params.setdefault("command", "migrate")))
        if not command:
            raise BadParameter("parameter command: empty")
        if resolve_exec(image, command, None).binary is not None:
            raise BadParameter(f"{self.id}: {image_ref} has {command[0]!r}; the Job would run")
        name = f"{dep['metadata']['name']}-migrate"
        if ctx.api.get("Job", ctx.namespace, name) is not None:
            raise BadParameter(f"{self.id}: Job {name} already exists")
        # What `kubectl create job NAME --image=IMAGE -- COMMAND` creates (backoffLimit 6,
        # restartPolicy Never), plus the service's env so it could reach its database.
        job_container: JsonObject = {"name": name, "image": image_ref, "command": command}
        if container.get("env"):
            job_container["env"] = container["env"]
        ctx.create(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name},
                "spec": {
                    "template": {"spec": {"restartPolicy": "Never", "containers": [job_container]}}
                },
            },
            change=f"Job/{name}: created (image {image_ref}, command {command})",
        )
