"""A namespace ResourceQuota set too low, then a restart: the new pods are refused.

Quota is enforced at admission, so pods already running are untouched; the ReplicaSet of the
restarted workload is refused ("exceeded quota") and reports FailedCreate, and its rollout
stalls. Kubernetes metrics do not show the refusal (kube-state-metrics has no gauge for it):
the events and the stalled rollout do.
"""

from __future__ import annotations

from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.kubeops import deployment_of, rollout_restart
from lab.faults.model import Param
from lab.faults.workload import MISCONFIG

QUOTA_NAME = "compute-quota"


class QuotaTooLow(Fault):
    id = "resource-quota-too-low"
    description = "apply a namespace ResourceQuota at current usage, then restart a workload"
    category = MISCONFIG
    params = (
        Param(
            name="pods",
            kind=int,
            help="the quota's hard limit on pods",
            default="the number of pods running now",
            minimum=0,
        ),
    )
    default_targets = targets({"hotel-reservation": "search", "online-shop": "checkout"})

    def apply(self, ctx: FaultContext) -> None:
        if ctx.api.get("ResourceQuota", ctx.namespace, QUOTA_NAME) is not None:
            raise BadParameter(f"{self.id}: ResourceQuota {QUOTA_NAME} already exists")
        dep = deployment_of(ctx)
        if "pods" not in ctx.params:
            ctx.params["pods"] = sum(
                1
                for p in ctx.api.list("Pod", ctx.namespace)
                if not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            )
        pods = int(ctx.params["pods"])
        ctx.create(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": QUOTA_NAME},
                "spec": {"hard": {"pods": str(pods)}},
            },
            change=f"ResourceQuota/{QUOTA_NAME}: created with hard pods={pods}",
        )
        rollout_restart(ctx, dep["metadata"]["name"])
