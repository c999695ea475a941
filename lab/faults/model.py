"""The fault library's values: parameters, ground truth, baselines and injection records.

An `Injection` is everything a caller needs after breaking the lab: what was changed (and
what it replaced, for the lab's own reset), when, the ground truth a correct diagnosis names,
and the baseline the mitigation oracle holds any fix to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from agents.model import Category, JsonObject
from lab.faults.errors import BadParameter

ParamValue = int | float | str


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    """One parameter a fault takes (`--param name=value`). `default` says in words what is used
    when it is left out, because most defaults depend on the app and the target."""

    name: str
    kind: type[int] | type[float] | type[str]
    help: str
    default: str = ""
    minimum: float | None = None
    maximum: float | None = None

    def parse(self, raw: object) -> ParamValue:
        if self.kind is str:
            if not isinstance(raw, str) or not raw:
                raise BadParameter(f"parameter {self.name}: expected a non-empty string")
            return raw
        wanted = "an integer" if self.kind is int else "a number"
        if not isinstance(raw, str | int | float) or isinstance(raw, bool):
            raise BadParameter(f"parameter {self.name}: expected {wanted}, got {raw!r}")
        try:
            value: int | float = int(raw) if self.kind is int else float(raw)
        except ValueError:
            raise BadParameter(f"parameter {self.name}: expected {wanted}, got {raw!r}") from None
        if self.minimum is not None and value < self.minimum:
            raise BadParameter(f"parameter {self.name}: must be ≥ {self.minimum:g}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise BadParameter(f"parameter {self.name}: must be ≤ {self.maximum:g}, got {value}")
        return value


DURATION = Param(
    name="duration_s",
    kind=float,
    help="lab seconds until the fault lifts by itself",
    default="300",
    minimum=1,
    maximum=86_400,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroundTruth:
    """What a correct diagnosis names. `root_causes` lists the acceptable root-cause services,
    the most specific first; it is empty for the no-fault control."""

    namespace: str
    root_causes: tuple[str, ...]
    category: Category | None
    undoable_fix: bool  # an undoable Kubernetes action fixes it (else Stratus should escalate)
    expects_incident: bool = True  # False for the control: any incident is a false positive

    @property
    def primary(self) -> str | None:
        return self.root_causes[0] if self.root_causes else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    """The namespace's workloads and their desired replicas just before the injection."""

    namespace: str
    workloads: Mapping[str, int]  # "Deployment/geo" → spec.replicas
    recorded_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedObject:
    """An object as it was before the injector changed it (or None: the injector created it)."""

    kind: str
    namespace: str
    name: str
    before: JsonObject | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Injection:
    """One injected fault: what was done, when, and what a correct response looks like."""

    fault_id: str
    app: str
    namespace: str
    target: str
    params: Mapping[str, ParamValue]
    truth: GroundTruth
    baseline: Baseline
    injected_at: datetime
    changes: tuple[str, ...]  # one line per change, as `stratus lab inject` prints them
    saved: tuple[SavedObject, ...] = ()
    expires_at: datetime | None = None  # time-bounded faults lift by themselves then

    def summary(self) -> str:
        return f"{self.fault_id} on {self.namespace}/{self.target}"
