"""The fault library: ways to break the lab's apps, each with its ground truth and a mitigation
oracle, modelled on AIOpsLab's and chaos-mesh's injectors.

    from lab.faults import fault, faults, check_mitigation

    injection = fault("wrong-target-port").inject(world, app="hotel-reservation")
    injection.truth.root_causes, injection.truth.category, injection.truth.undoable_fix
    ...                                   # let Stratus (or a person) respond
    check_mitigation(world, injection)    # OracleVerdict(mitigated=..., problems=(...))
    fault(injection.fault_id).recover(world, injection)   # the lab's own reset

Spec faults write through the cluster API with field manager `kubectl`; data-plane faults act on
`world.dataplane`; pod failure patches pods as chaos-mesh does and ends itself on a lab-time
timer. Symptoms are never injected: they follow from the cluster's state (DESIGN section 9).
"""

from lab.faults.base import Fault
from lab.faults.errors import BadParameter, FaultError, InjectionFailed, UnknownFault
from lab.faults.model import Baseline, GroundTruth, Injection, Param
from lab.faults.oracle import MitigationOracle, OracleVerdict, check_mitigation
from lab.faults.registry import fault, faults

__all__ = [
    "BadParameter",
    "Baseline",
    "Fault",
    "FaultError",
    "GroundTruth",
    "Injection",
    "InjectionFailed",
    "MitigationOracle",
    "OracleVerdict",
    "Param",
    "UnknownFault",
    "check_mitigation",
    "fault",
    "faults",
]
