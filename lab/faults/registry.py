"""The fault library's registry: every fault, by id, in a stable order."""

from __future__ import annotations

from lab.faults.base import Fault
from lab.faults.behaviour import ConfigMapWithoutRestart, SlowMemoryLeak
from lab.faults.config import FeatureFlag, WrongDatabaseHost
from lab.faults.control import NoFault
from lab.faults.controllers import (
    HpaMaxTooLow,
    JobKeepsFailing,
    PdbBlocksDrain,
    RolloutStuckProgressDeadline,
)
from lab.faults.dataplane import NetworkDelay, NetworkLoss, RevokedCredentials
from lab.faults.errors import UnknownFault
from lab.faults.netpolicy import ClusterDnsFailing, NetworkPolicyDeny
from lab.faults.podfailure import PodFailure
from lab.faults.quota import QuotaTooLow
from lab.faults.rollout import CrashingImage, ImageNotFound, WrongBinary
from lab.faults.scheduling import (
    LimitRangeTooLow,
    NodeNotReady,
    NodeTaintNoToleration,
    PvcPending,
    RequestsExceedNode,
)
from lab.faults.service import WrongTargetPort
from lab.faults.startup import (
    ImagePullUnauthorized,
    InitContainerFails,
    MissingConfigKey,
    ReadinessProbeWrongPort,
)
from lab.faults.workload import CpuLimitTooLow, MemoryLimitTooLow, NodeSelectorMismatch, ScaleToZero

_FAULTS: tuple[Fault, ...] = (
    ScaleToZero(),
    WrongTargetPort(),
    ImageNotFound(),
    CrashingImage(),
    WrongBinary(),
    NodeSelectorMismatch(),
    MemoryLimitTooLow(),
    CpuLimitTooLow(),
    WrongDatabaseHost(),
    FeatureFlag(),
    RevokedCredentials(),
    QuotaTooLow(),
    NetworkDelay(),
    NetworkLoss(),
    PodFailure(),
    ReadinessProbeWrongPort(),
    MissingConfigKey(),
    InitContainerFails(),
    ImagePullUnauthorized(),
    RequestsExceedNode(),
    NodeTaintNoToleration(),
    PvcPending(),
    LimitRangeTooLow(),
    NodeNotReady(),
    HpaMaxTooLow(),
    RolloutStuckProgressDeadline(),
    PdbBlocksDrain(),
    JobKeepsFailing(),
    SlowMemoryLeak(),
    ConfigMapWithoutRestart(),
    NetworkPolicyDeny(),
    ClusterDnsFailing(),
    NoFault(),
)
_BY_ID = {f.id: f for f in _FAULTS}


def faults() -> list[Fault]:
    """Every fault, in the library's order (the control last)."""
    return list(_FAULTS)


def fault(fault_id: str) -> Fault:
    """The fault with this id. Raises `UnknownFault` naming the known ids."""
    found = _BY_ID.get(fault_id)
    if found is None:
        raise UnknownFault(f"unknown fault {fault_id!r}; faults: {', '.join(_BY_ID)}")
    return found
