"""Pod failure, the way chaos-mesh's `pod-failure` action does it.

A pod's container images are the one part of its spec that may change, so chaos-mesh swaps each
container's image for a pause image (remembering the original in an annotation); the kubelet
restarts the container from it, and a pause container serves nothing. When the experiment's
duration is over, the controller puts the original images back. Deleting the failed pods ends
it early: their ReplicaSet creates fresh pods from the unchanged template.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING

from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.kubeops import deployment_of, pods_of
from lab.faults.model import DURATION, Injection, Param
from lab.faults.timers import timers_for
from lab.faults.workload import OPERATION
from lab.kube.errors import ApiError
from lab.sim.images import ImageSpec

if TYPE_CHECKING:
    from lab.sim.world import LabWorld

logger = logging.getLogger(__name__)

#: chaos-mesh's default `--pod-failure-pause-image`.
PAUSE_IMAGE = "gcr.io/google-containers/pause:latest"
#: The field manager of chaos-mesh's controller, which makes these writes.
CHAOS_MANAGER = "chaos-controller-manager"
#: Where the original image of each container is kept while the fault lasts.
ANNOTATION_PREFIX = "pod-failure.lab.stratus.dev/"


def _annotation(container: str) -> str:
    return f"{ANNOTATION_PREFIX}{container}"


class PodFailure(Fault):
    id = "pod-failure"
    description = "make a workload's pods unavailable for a while (chaos-mesh pod-failure)"
    category = OPERATION
    params = (
        Param(name="mode", kind=str, help="'all' pods of the workload, or 'one'", default="all"),
        DURATION,
    )
    default_targets = targets({"hotel-reservation": "geo", "online-shop": "currency"})

    def apply(self, ctx: FaultContext) -> None:
        mode = str(ctx.params.setdefault("mode", "all"))
        if mode not in ("all", "one"):
            raise BadParameter(f"parameter mode: expected 'all' or 'one', got {mode!r}")
        duration = float(ctx.params.setdefault(DURATION.name, 300.0))
        pods = sorted(pods_of(ctx, deployment_of(ctx)), key=lambda p: p["metadata"]["name"])
        pods = [p for p in pods if not _failed_containers(p)]
        if not pods:
            raise BadParameter(f"{self.id}: {ctx.target} has no running pod to fail")
        registry = ctx.world.registry
        if registry.get(PAUSE_IMAGE) is None:
            # The image exists upstream; the lab's registry only lists the apps' images.
            registry.push(
                PAUSE_IMAGE, ImageSpec(binaries=frozenset({"/pause"}), entrypoint=("/pause",))
            )
        ctx.expires_at = ctx.now + timedelta(seconds=duration)
        for pod in pods[:1] if mode == "one" else pods:
            containers = pod["spec"]["containers"]
            ctx.patch(
                "Pod",
                pod["metadata"]["name"],
                {
                    "metadata": {
                        "annotations": {_annotation(c["name"]): c["image"] for c in containers}
                    },
                    "spec": {
                        "containers": [
                            {"name": c["name"], "image": PAUSE_IMAGE} for c in containers
                        ]
                    },
                },
                patch_type="strategic",
                field_manager=CHAOS_MANAGER,
                change=f"Pod/{pod['metadata']['name']}: images → {PAUSE_IMAGE} for {duration:g}s",
            )
        world, namespace = ctx.world, ctx.namespace
        names = [s.name for s in ctx.saved]

        def end() -> None:
            lines = _restore(world, namespace, names)
            logger.info("pod failure over: %s", "; ".join(lines) or "no failed pod left")

        timers_for(world.clock).call_at(
            ctx.expires_at, end, name=f"{self.id} {namespace}/{ctx.target}"
        )

    def recover(self, world: LabWorld, injection: Injection) -> tuple[str, ...]:
        """Give every pod still failed by this injection its original images back."""
        return _restore(world, injection.namespace, [s.name for s in injection.saved])

    def blockers(self, world: LabWorld, injection: Injection) -> list[str]:
        out = []
        for pod in world.shared.list("Pod", injection.namespace):
            if _failed_containers(pod) and not pod["metadata"].get("deletionTimestamp"):
                out.append(f"Pod/{pod['metadata']['name']} still runs {PAUSE_IMAGE}")
        return out


def _failed_containers(pod: dict[str, object]) -> dict[str, str]:
    """container → original image, for the containers pod failure has swapped."""
    meta = pod.get("metadata")
    annotations = (meta.get("annotations") if isinstance(meta, dict) else None) or {}
    return {
        key.removeprefix(ANNOTATION_PREFIX): str(value)
        for key, value in annotations.items()
        if key.startswith(ANNOTATION_PREFIX)
    }


def _restore(world: LabWorld, namespace: str, names: list[str]) -> tuple[str, ...]:
    done: list[str] = []
    for name in names:
        pod = world.api.get("Pod", namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            continue
        originals = _failed_containers(pod)
        if not originals:
            continue
        try:
            world.api.patch(
                "Pod",
                namespace,
                name,
                {
                    "metadata": {"annotations": {_annotation(c): None for c in originals}},
                    "spec": {
                        "containers": [
                            {"name": c, "image": image} for c, image in originals.items()
                        ]
                    },
                },
                patch_type="strategic",
                field_manager=CHAOS_MANAGER,
            )
        except ApiError as e:  # deleted meanwhile: nothing left to restore
            logger.info("pod failure: could not restore %s: %s", name, e.message)
            continue
        done.append(f"Pod/{name}: original images restored")
    return tuple(done)
