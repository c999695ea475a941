"""A Service whose targetPort points where no container listens (AIOpsLab's misconfig_k8s).

The pods stay Ready — their readiness probes check the port they really listen on — and the
endpoints exist; only connections through the Service are refused. That is the signature the
diagnosis has to read: callers fail with "connection refused" while the callee looks healthy.
"""

from __future__ import annotations

from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.model import Param
from lab.faults.workload import MISCONFIG


class WrongTargetPort(Fault):
    id = "wrong-target-port"
    description = "point a Service's targetPort at a port nothing listens on"
    category = MISCONFIG
    params = (
        Param(
            name="port",
            kind=int,
            help="the wrong targetPort",
            default="9999",
            minimum=1,
            maximum=65535,
        ),
    )
    default_targets = targets({"hotel-reservation": "geo", "online-shop": "product-catalog"})

    def apply(self, ctx: FaultContext) -> None:
        svc = ctx.get("Service", ctx.target)
        ports = svc["spec"].get("ports") or []
        listen = ctx.bundle.model.services[ctx.target].listen.port
        index = next(
            (i for i, p in enumerate(ports) if p.get("targetPort", p.get("port")) == listen), 0
        )
        if not ports:
            raise BadParameter(f"{self.id}: Service {ctx.target} has no ports")
        port = int(ctx.params.setdefault("port", 9999))
        old = ports[index].get("targetPort", ports[index].get("port"))
        if port == old:
            raise BadParameter(f"{self.id}: targetPort is already {port}")
        ctx.patch(
            "Service",
            ctx.target,
            [{"op": "replace", "path": f"/spec/ports/{index}/targetPort", "value": port}],
            patch_type="json",
            change=f"Service/{ctx.target}: spec.ports[{index}].targetPort {old} → {port}",
        )
