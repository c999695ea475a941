"""The scenario file format: what a scenario breaks, what else happens meanwhile, and what a
correct response looks like.

A scenario is a YAML file in a suite directory (`lab/scenarios/` is the public suite). These
pydantic models *are* the format: the files are validated with them, and the JSON Schema in
`lab/scenarios/README.md` is generated from them (`lab.bench.schema`; a test keeps the two
equal), so the documentation cannot drift from what the loader accepts.

Checks that need the fault library or an app's model (does the fault exist, does it apply to
the app, is the target a service of the app, do the parameters parse) live in
`lab.bench.suite`, which reports them with the same file/field/reason shape as schema errors.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agents.model import Category

#: Scenario and suite ids: lower-case words joined by dashes (they name report rows and files).
ID_PATTERN = r"^[a-z0-9][a-z0-9-]{1,79}$"

Seconds = Annotated[float, Field(ge=0, le=86_400, description="lab seconds")]


class Expect(StrEnum):
    """How a scenario's outcome is judged (README: "How each expectation is scored")."""

    MITIGATED = "mitigated"  # the faults' own oracles, combined, say the app is healed
    ESCALATED = "escalated"  # no undoable action fixes it: escalate, write nothing
    NO_INCIDENT = "no-incident"  # a control: open no incident, write nothing


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FaultStep(_Strict):
    """One fault from the library (`stratus lab faults` lists them), injected `at` seconds after
    the scenario starts."""

    fault: str = Field(description="a fault id of the lab's fault library")
    target: str | None = Field(
        default=None, description="the service to break (default: the fault's own default)"
    )
    params: dict[str, str | int | float] = Field(
        default_factory=dict, description="the fault's parameters (`stratus lab faults`)"
    )
    at: Seconds = 0.0


class _NoiseBase(_Strict):
    at: Seconds


class DeletePod(_NoiseBase):
    """Delete one healthy pod of a service's Deployment (a node drain, an eviction, someone
    cleaning up); its ReplicaSet replaces it, and the new pod is not Ready while it starts."""

    kind: Literal["delete-pod"]
    target: str = Field(description="a service of the app")


class RolloutRestart(_NoiseBase):
    """`kubectl rollout restart` of a healthy Deployment: a routine change in the journal, and a
    readiness blip per replica while new pods start (a surge keeps the old ones serving)."""

    kind: Literal["rollout-restart"]
    target: str


class SetImage(_NoiseBase):
    """A harmless release: `kubectl set image` to another tag the registry has and that works
    (checked at run time) — a change just before trouble that is not its cause."""

    kind: Literal["set-image"]
    target: str
    tag: str = Field(min_length=1, description="the new tag of the main container's image")


class WarningEvent(_NoiseBase):
    """A harmless Warning event on a pod of the service (a slow probe, a transient pull
    hiccup): what `kubectl get events` is full of on a healthy cluster."""

    kind: Literal["warning-event"]
    target: str
    reason: str = Field(default="Unhealthy", min_length=1)
    message: str = Field(
        default="Readiness probe failed: context deadline exceeded (Client.Timeout exceeded "
        "while awaiting headers)",
        min_length=1,
    )
    count: int = Field(default=1, ge=1, le=100, description="how many times it is reported")


class CordonNode(_NoiseBase):
    """Node maintenance: cordon a node (nothing new is scheduled there) and uncordon it after
    `duration` seconds. Running pods are not touched."""

    kind: Literal["cordon-node"]
    node: str = Field(min_length=1, description="a node name (the lab's nodes: lab-node-1...)")
    duration: Seconds = 120.0


class NetworkBlip(_NoiseBase):
    """A short latency bump on the network path into a service (a noisy neighbour), small
    enough to stay inside the app's latency SLO; it lifts by itself after `duration`."""

    kind: Literal["network-blip"]
    target: str
    delay_ms: float = Field(default=40.0, gt=0, le=200)
    duration: Seconds = 30.0


class ScaleUp(_NoiseBase):
    """Capacity added ahead of a busy hour: `kubectl scale` a service's Deployment up to
    `replicas`. Refused when it would lower the count: a scale-down can remove capacity the
    service needs, which is no longer noise."""

    kind: Literal["scale"]
    target: str
    replicas: int = Field(ge=1, le=20, description="the new replica count (≥ the current one)")


class ConfigEdit(_NoiseBase):
    """A colleague adds or edits a setting no container reads yet (`kubectl patch configmap`):
    a recorded ConfigMap change just before trouble that is not its cause. Refused when a
    container of the app reads the key (configMapKeyRef) or the whole ConfigMap (envFrom, a
    volume)."""

    kind: Literal["config-edit"]
    config_map: str = Field(min_length=1)
    key: str = Field(min_length=1, pattern=r"^[-._a-zA-Z0-9]+$")
    value: str = Field(description="the new value")


Noise = Annotated[
    DeletePod
    | RolloutRestart
    | SetImage
    | WarningEvent
    | CordonNode
    | NetworkBlip
    | ScaleUp
    | ConfigEdit,
    Field(discriminator="kind"),
]


class GroundTruthSpec(_Strict):
    """What a correct diagnosis names. Checked at run time against the ground truth the fault
    library records for each injection: a scenario cannot claim a different answer."""

    root_causes: list[str] = Field(
        min_length=1, description="acceptable root-cause services (any one counts)"
    )
    category: list[str] = Field(
        min_length=1,
        description="AIOpsLab category `level/type` (docs/taxonomy.md), or a list of them "
        "(two faults): the top hypothesis must name one",
    )

    @field_validator("category", mode="before")
    @classmethod
    def _one_or_more(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("category")
    @classmethod
    def _categories(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                Category.parse(item)
            except ValueError:
                raise ValueError(
                    f"{item!r} is not a category `level/type` of docs/taxonomy.md"
                ) from None
        return value


class TimeLimits(_Strict):
    """Lab seconds from the first fault (`total`: from the start of the scenario)."""

    detect: Seconds = Field(default=120.0, description="an incident must open within this")
    mitigate: Seconds = Field(default=600.0, description="the oracle must pass within this")
    total: Seconds = Field(default=900.0, description="the run ends here at the latest")

    @model_validator(mode="after")
    def _order(self) -> TimeLimits:
        if self.total <= 0:
            raise ValueError("total must be positive")
        given = self.model_fields_set
        for name in ("detect", "mitigate"):
            if name in given and getattr(self, name) > self.total:
                raise ValueError(f"{name} must not exceed total")
        return self


class Scenario(_Strict):
    """One scenario file."""

    id: str = Field(pattern=ID_PATTERN, description="unique in the suite")
    app: Literal["hotel-reservation", "online-shop"]
    description: str = Field(min_length=1)
    tags: list[str] = Field(
        default_factory=list,
        description="free labels for the report (single-fault, two-faults, misleading, "
        "unfixable, control, ...)",
    )
    faults: list[FaultStep] = Field(
        default_factory=list,
        description="empty, or only `no-fault`, for a control",
    )
    noise: list[Noise] = Field(default_factory=list)
    ground_truth: GroundTruthSpec | None = Field(
        default=None, description="required unless the scenario is a control"
    )
    expect: Expect | None = Field(
        default=None,
        description="default: no-incident for a control, escalated when any fault has no "
        "undoable fix, else mitigated",
    )
    time_limits: TimeLimits = Field(default_factory=TimeLimits)

    @property
    def is_control(self) -> bool:
        return all(f.fault == "no-fault" for f in self.faults)

    @property
    def real_faults(self) -> list[FaultStep]:
        return [f for f in self.faults if f.fault != "no-fault"]

    @property
    def first_fault_at(self) -> float:
        return min((f.at for f in self.faults), default=0.0)

    @property
    def last_event_at(self) -> float:
        return max([0.0, *(f.at for f in self.faults), *(n.at for n in self.noise)])

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if self.is_control:
            if self.ground_truth is not None:
                raise ValueError("a control (no fault) has no ground_truth")
            if self.expect not in (None, Expect.NO_INCIDENT):
                raise ValueError("a control (no fault) can only expect no-incident")
        else:
            if self.ground_truth is None:
                raise ValueError("ground_truth is required for a scenario with faults")
            if self.expect is Expect.NO_INCIDENT:
                raise ValueError("a scenario with faults cannot expect no-incident")
        if self.time_limits.total <= self.last_event_at:
            raise ValueError("time_limits.total must end after the last fault and noise")
        return self
