"""Finding a target's objects and writing the patches kubectl sends for common commands.

`kubectl set image`, `kubectl set resources` and `kubectl patch` on a container send a strategic
merge patch keyed by container name; `kubectl rollout restart` stamps the pod template with
`kubectl.kubernetes.io/restartedAt`. These helpers build the same bodies.
"""

from __future__ import annotations

from typing import Any

from agents.model import JsonObject
from lab.faults.base import FaultContext
from lab.faults.errors import BadParameter
from lab.kube.jsonutil import rfc3339

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


def deployment_of(ctx: FaultContext, service: str | None = None) -> JsonObject:
    """The Deployment running a service: the one whose pod template carries the app's service
    label with that value (its name is usually the same)."""
    service = service or ctx.target
    label = ctx.bundle.model.service_label
    for dep in ctx.api.list("Deployment", ctx.namespace):
        labels = (((dep.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
            "labels"
        ) or {}
        if labels.get(label) == service:
            return dep
    raise BadParameter(f"no Deployment in {ctx.namespace} runs {service!r}")


def main_container(dep: JsonObject) -> JsonObject:
    containers = dep["spec"]["template"]["spec"].get("containers") or []
    if not containers:
        raise BadParameter(f"Deployment {dep['metadata']['name']} has no containers")
    first: JsonObject = containers[0]
    return first


def container_patch(container: str, **fields: Any) -> JsonObject:
    """A strategic merge patch changing fields of one container of a pod template."""
    return {"spec": {"template": {"spec": {"containers": [{"name": container, **fields}]}}}}


def rollout_restart(ctx: FaultContext, deployment: str) -> None:
    """`kubectl rollout restart deployment/NAME`: new pods, same spec otherwise."""
    stamp = rfc3339(ctx.now)
    ctx.patch(
        "Deployment",
        deployment,
        {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}},
        patch_type="strategic",
        change=f"Deployment/{deployment}: rollout restart ({RESTARTED_AT}={stamp})",
    )


def pods_of(ctx: FaultContext, deployment: JsonObject) -> list[JsonObject]:
    """The live (not terminating) pods a Deployment's selector matches."""
    match = deployment["spec"]["selector"].get("matchLabels") or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(match.items()))
    return [
        p
        for p in ctx.api.list("Pod", ctx.namespace, label_selector=selector)
        if not p["metadata"].get("deletionTimestamp")
    ]
