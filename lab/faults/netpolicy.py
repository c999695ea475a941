"""A NetworkPolicy that locks a service down to the callers somebody remembered.

An operator hardens a service with `kubectl apply` of a policy that selects its pods and
allows ingress only from the web tier. Any other caller's connections are dropped by the CNI
(`lab.sim.netpolicy`): its dials time out while the callee stays Ready and healthy. Stratus's
action vocabulary has no write for NetworkPolicies, so the right outcome is an escalation whose
runbook names the policy (`kubectl delete networkpolicy ...` or a rule for the missed caller).
"""

from __future__ import annotations

from agents.model import Category, FaultLevel, FaultType
from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.kubeops import deployment_of, main_container
from lab.faults.model import Param

#: A dropped connection is a partition of the network path to the callee, seen by its
#: callers exactly as packet loss is: the data plane (the CNI) drops it, the pods are healthy.
NETWORK = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.NETWORK)


class NetworkPolicyDeny(Fault):
    id = "network-policy-deny"
    description = "apply a NetworkPolicy that admits only some callers; the others' dials time out"
    category = NETWORK
    undoable_fix = False
    params = (
        Param(
            name="allow",
            kind=str,
            help="comma-separated services whose pods the policy admits ('none': a default deny)",
            default="frontend (the web tier), which misses the target's other callers",
        ),
    )
    default_targets = targets({"hotel-reservation": "geo", "online-shop": "currency"})

    def apply(self, ctx: FaultContext) -> None:
        model = ctx.bundle.model
        allow_text = str(ctx.params.setdefault("allow", "frontend"))
        allowed = [s.strip() for s in allow_text.split(",") if s.strip() not in ("", "none")]
        for name in allowed:
            if name not in model.services:
                raise BadParameter(f"parameter allow: {ctx.namespace} has no service {name!r}")
        callers = sorted(
            name
            for name, program in model.services.items()
            if any(c.target == ctx.target for c in program.calls)
        )
        if callers and set(callers) <= set(allowed):
            raise BadParameter(
                f"{self.id}: the policy admits every caller of {ctx.target} ({', '.join(callers)})"
            )
        label = model.service_label
        dep = deployment_of(ctx)
        selector = dict(dep["spec"]["selector"].get("matchLabels") or {label: ctx.target})
        container = main_container(dep)
        ports = [int(p["containerPort"]) for p in container.get("ports") or []] or [
            model.services[ctx.target].listen.port
        ]
        name = f"allow-web-to-{ctx.target}"
        ctx.create(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {"name": name},
                "spec": {
                    "podSelector": {"matchLabels": selector},
                    "policyTypes": ["Ingress"],
                    "ingress": [
                        {
                            "from": [{"podSelector": {"matchLabels": {label: s}}} for s in allowed],
                            "ports": [{"protocol": "TCP", "port": p} for p in ports],
                        }
                    ]
                    if allowed
                    else [],
                },
            },
            change=f"NetworkPolicy/{name}: created; ingress to {ctx.target} only from "
            f"{', '.join(allowed) or 'nobody'}",
        )
