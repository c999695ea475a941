"""The no-fault control: nothing is broken. A correct Stratus opens no incident; if it opens
one, that is a false positive, and if it acts anyway, the oracle still demands no harm done."""

from __future__ import annotations

from lab.faults.base import Fault, FaultContext, targets
from lab.faults.model import GroundTruth


class NoFault(Fault):
    id = "no-fault"
    description = "change nothing (a control: any incident opened is a false positive)"
    category = None
    default_targets = targets({"hotel-reservation": "frontend", "online-shop": "frontend-proxy"})

    def apply(self, ctx: FaultContext) -> None:
        ctx.changes.append("nothing changed (control)")

    def truth(self, ctx: FaultContext) -> GroundTruth:
        return GroundTruth(
            namespace=ctx.namespace,
            root_causes=(),
            category=None,
            undoable_fix=True,
            expects_incident=False,
        )
