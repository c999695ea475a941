"""A NetworkPolicy that locks a service down to the callers somebody remembered.

An operator hardens a service with `kubectl apply` of a policy that selects its pods and
allows ingress only from the web tier. Any other caller's connections are dropped by the CNI
(`lab.sim.netpolicy`): its dials time out while the callee stays Ready and healthy. Stratus's
action vocabulary has no write for NetworkPolicies, so the right outcome is an escalation whose
runbook names the policy (`kubectl delete networkpolicy ...` or a rule for the missed caller).
"""

from __future__ import annotations

from agents.model import Category, FaultLevel, FaultType
from lab.faults.base import FIELD_MANAGER, Fault, FaultContext, clean, targets
from lab.faults.errors import BadParameter, InjectionFailed
from lab.faults.kubeops import deployment_of, main_container
from lab.faults.model import Param, SavedObject
from lab.kube.errors import ApiError
from lab.sim import clusterdns

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


class ClusterDnsFailing(Fault):
    """`kubectl -n kube-system scale deployment coredns --replicas=0`: the kube-dns Service
    loses its endpoints, every lookup of a Service name times out, and every new connection
    by name fails across the app. The fix is outside the app's namespace (and outside
    Stratus's writes): escalate with a runbook. The root cause is CoreDNS, not an app
    service, so the injection's target becomes `coredns` (as feature-flag's becomes flagd's
    victim)."""

    id = "cluster-dns-failing"
    description = "scale CoreDNS (kube-system) to zero; every lookup of a Service name times out"
    category = NETWORK
    undoable_fix = False
    # Any app service will do as the nominal target: the fault is cluster-wide.
    default_targets = targets({"hotel-reservation": "frontend", "online-shop": "frontend"})

    def apply(self, ctx: FaultContext) -> None:
        dep = ctx.api.get("Deployment", clusterdns.NAMESPACE, clusterdns.DEPLOYMENT)
        if dep is None:
            raise BadParameter(f"{self.id}: this cluster runs no CoreDNS in kube-system")
        old = int((dep.get("spec") or {}).get("replicas", 1))
        if old == 0:
            raise BadParameter(f"{self.id}: CoreDNS already runs 0 replicas")
        ctx.saved.append(
            SavedObject(
                kind="Deployment",
                namespace=clusterdns.NAMESPACE,
                name=clusterdns.DEPLOYMENT,
                before=clean(dep),
            )
        )
        try:
            ctx.api.patch(
                "Deployment",
                clusterdns.NAMESPACE,
                clusterdns.DEPLOYMENT,
                {"spec": {"replicas": 0}},
                patch_type="merge",
                field_manager=FIELD_MANAGER,
            )
        except ApiError as e:
            raise InjectionFailed(f"Deployment/{clusterdns.DEPLOYMENT}: {e.message}") from e
        ctx.changes.append(
            f"{clusterdns.NAMESPACE}/Deployment/{clusterdns.DEPLOYMENT}: spec.replicas {old} → 0"
        )
        ctx.target = clusterdns.DEPLOYMENT
