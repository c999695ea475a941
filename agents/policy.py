"""The policy file: how far Stratus may go on its own, and who may approve what.

```yaml
defaults:
  autonomy: propose            # observe | propose | auto-low-risk | autonomous
  approvers:                   # Slack user ids (U…) or user-group handles (@sre-oncall)
    low: ["@sre-oncall"]
    medium: ["@sre-oncall"]
    high: ["@sre-leads"]
  two_person_rule: high        # this tier and above needs two distinct approvers
  approval_ttl: 15m
  max_actions: 5               # K
  deadline: 10m                # Δ
  sustain: 60s                 # validation window
  attempts: 3
  slo: {error_ratio: 0.05, latency_p99_ms: 800}
  weights: {alert_critical: 3, alert_warning: 1, error_slo: 2, latency_slo: 1,
            lost_replica: 1, unschedulable_pod: 1}
  max_replicas: 20             # no plan scales a workload (or an HPA maximum) above this
  scale_factor: 3              # a replica count never recorded: at most 3× what runs now
  image_registries: []         # registries a new image may come from; [] = only images
                               # already run in this namespace (live, rollout history, journal)
namespaces:
  hotel-reservation:
    autonomy: auto-low-risk
```

Bounds (`max_replicas`, `scale_factor`, `image_registries`) ground the values a plan may
write that no recorded state had (DESIGN section 3 rule 9): a value outside them is refused,
not proposed. A namespace entry overrides the defaults field by field. An invalid file is
refused as a whole with `PolicyError("<file>:<line>: <field>: <reason>")`: the bot never runs
on part of a policy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agents.errors import PolicyError
from agents.model import Autonomy, Risk
from agents.severity import SeverityWeights, Slo
from agents.tnr.limits import TnrLimits

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_APPROVER = re.compile(r"^(@[a-z0-9][a-z0-9._-]*|[UW][A-Z0-9]{2,})$")


def parse_duration(value: Any) -> float:
    """`90`, `90s`, `15m`, `1h`, `500ms` → seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"expected a duration like 90s, 15m or 1h, got {value!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Approvers(_Strict):
    low: tuple[str, ...] | None = None
    medium: tuple[str, ...] | None = None
    high: tuple[str, ...] | None = None

    @field_validator("low", "medium", "high")
    @classmethod
    def _ids(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for item in value or ():
            if not _APPROVER.match(item):
                raise ValueError(
                    f"{item!r} is neither a Slack user id (U…) nor a user-group handle (@name)"
                )
        return value


class _Slo(_Strict):
    error_ratio: float | None = Field(default=None, gt=0, lt=1)
    latency_p99_ms: float | None = Field(default=None, gt=0)


class _Weights(_Strict):
    alert_critical: float | None = Field(default=None, ge=0)
    alert_warning: float | None = Field(default=None, ge=0)
    error_slo: float | None = Field(default=None, ge=0)
    latency_slo: float | None = Field(default=None, ge=0)
    lost_replica: float | None = Field(default=None, ge=0)
    unschedulable_pod: float | None = Field(default=None, ge=0)


_REGISTRY = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?$")


class _Section(_Strict):
    autonomy: Autonomy | None = None
    max_replicas: int | None = Field(default=None, ge=1, le=10000)
    scale_factor: float | None = Field(default=None, ge=1, le=100)
    image_registries: tuple[str, ...] | None = None
    approvers: _Approvers | None = None
    two_person_rule: Risk | None = None
    approval_ttl: float | None = None
    max_actions: int | None = Field(default=None, ge=1, le=20)
    deadline: float | None = None
    sustain: float | None = None
    attempts: int | None = Field(default=None, ge=1, le=10)
    slo: _Slo | None = None
    weights: _Weights | None = None

    @field_validator("image_registries")
    @classmethod
    def _registries(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for item in value or ():
            if not _REGISTRY.match(item):
                raise ValueError(
                    f"{item!r} is not a registry host (like registry.example.com or ghcr.io)"
                )
        return value

    @field_validator("approval_ttl", "deadline", "sustain", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float | None:
        if value is None:
            return None
        seconds = parse_duration(value)
        if seconds <= 0:
            raise ValueError("must be positive")
        return seconds


class _File(_Strict):
    defaults: _Section = _Section()
    namespaces: dict[str, _Section] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Bounds:
    """What a plan may write that no recorded state of the object had."""

    max_replicas: int = 20
    scale_factor: float = 3.0
    #: Registries a new image may come from; empty: only images already run in the namespace.
    image_registries: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespacePolicy:
    """The effective policy for one namespace (defaults merged with its override)."""

    namespace: str
    autonomy: Autonomy = Autonomy.PROPOSE
    approvers: Mapping[Risk, tuple[str, ...]] = field(default_factory=dict)
    two_person_rule: Risk = Risk.HIGH
    approval_ttl_s: float = 900.0
    attempts: int = 3
    limits: TnrLimits = field(default_factory=TnrLimits)
    slo: Slo = field(default_factory=Slo)
    weights: SeverityWeights = field(default_factory=SeverityWeights)
    bounds: Bounds = field(default_factory=Bounds)

    def approvers_for(self, risk: Risk) -> tuple[str, ...]:
        return self.approvers.get(risk, ())

    def approvals_needed(self, risk: Risk) -> int:
        return 2 if risk.rank >= self.two_person_rule.rank else 1

    def runs_without_approval(self, risk: Risk) -> bool:
        if self.autonomy is Autonomy.AUTONOMOUS:
            return risk is not Risk.HIGH
        return self.autonomy is Autonomy.AUTO_LOW_RISK and risk is Risk.LOW

    @property
    def may_act(self) -> bool:
        return self.autonomy is not Autonomy.OBSERVE


@dataclass(frozen=True, slots=True)
class Policy:
    defaults: NamespacePolicy
    namespaces: Mapping[str, NamespacePolicy]
    source: str = "built-in"

    def for_namespace(self, namespace: str) -> NamespacePolicy:
        return self.namespaces.get(namespace) or _rename(self.defaults, namespace)

    @property
    def covered_namespaces(self) -> tuple[str, ...]:
        return tuple(sorted(self.namespaces))


def _rename(policy: NamespacePolicy, namespace: str) -> NamespacePolicy:
    return replace(policy, namespace=namespace)


def _merge(base: NamespacePolicy, section: _Section, namespace: str) -> NamespacePolicy:
    return NamespacePolicy(
        namespace=namespace,
        bounds=_merge_bounds(base.bounds, section),
        autonomy=section.autonomy or base.autonomy,
        approvers=_merge_approvers(base.approvers, section.approvers),
        two_person_rule=section.two_person_rule or base.two_person_rule,
        approval_ttl_s=section.approval_ttl or base.approval_ttl_s,
        attempts=section.attempts or base.attempts,
        limits=_merge_limits(base.limits, section),
        slo=_merge_slo(base.slo, section.slo),
        weights=_merge_weights(base.weights, section.weights),
    )


def _merge_approvers(
    base: Mapping[Risk, tuple[str, ...]], given: _Approvers | None
) -> dict[Risk, tuple[str, ...]]:
    """Per risk tier: a tier the section names replaces the base's list for that tier."""
    approvers = dict(base)
    if given is not None:
        for risk in Risk:
            chosen = getattr(given, risk.value)
            if chosen is not None:
                approvers[risk] = chosen
    return approvers


def _merge_limits(base: TnrLimits, section: _Section) -> TnrLimits:
    if section.max_actions is None and section.deadline is None and section.sustain is None:
        return base
    return replace(
        base,
        max_actions=section.max_actions or base.max_actions,
        deadline_s=section.deadline or base.deadline_s,
        sustain_s=section.sustain or base.sustain_s,
    )


def _merge_slo(base: Slo, given: _Slo | None) -> Slo:
    if given is None:
        return base
    return Slo(
        error_ratio=given.error_ratio or base.error_ratio,
        latency_p99_ms=given.latency_p99_ms or base.latency_p99_ms,
        min_request_rate=base.min_request_rate,
    )


def _merge_weights(base: SeverityWeights, given: _Weights | None) -> SeverityWeights:
    if given is None:
        return base
    named = {k: v for k, v in given.model_dump().items() if v is not None}
    return SeverityWeights(**{**_weights_dict(base), **named})


def _merge_bounds(base: Bounds, section: _Section) -> Bounds:
    return Bounds(
        max_replicas=section.max_replicas or base.max_replicas,
        scale_factor=section.scale_factor or base.scale_factor,
        image_registries=(
            section.image_registries
            if section.image_registries is not None
            else base.image_registries
        ),
    )


def _weights_dict(weights: SeverityWeights) -> dict[str, float]:
    return {name: getattr(weights, name) for name in SeverityWeights.__dataclass_fields__}


def default_policy() -> Policy:
    """Used when no policy file is configured: every plan needs one approval from anyone."""
    return Policy(defaults=NamespacePolicy(namespace="*"), namespaces={})


def build_policy(data: Mapping[str, Any], *, source: str = "policy") -> Policy:
    """From already-parsed data (no line numbers in errors)."""
    parsed = _File.model_validate(data)
    defaults = _merge(NamespacePolicy(namespace="*"), parsed.defaults, "*")
    namespaces = {ns: _merge(defaults, section, ns) for ns, section in parsed.namespaces.items()}
    return Policy(defaults=defaults, namespaces=namespaces, source=source)


def load_policy(path: Path) -> Policy:
    """Load and validate a policy file. Any problem raises `PolicyError` naming file, line,
    field and reason."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PolicyError(f"{path}: cannot read the policy file: {e.strerror}") from e
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(e, "problem", None) or str(e)
        raise PolicyError(f"{path}:{line}: (yaml): {problem}") from e
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyError(
            f"{path}:1: (top level): expected a mapping with 'defaults' and 'namespaces'"
        )
    try:
        return build_policy(data, source=str(path))
    except ValidationError as e:
        first = e.errors()[0]
        loc = tuple(first["loc"])
        where = ".".join(str(p) for p in loc) or "(top level)"
        reason = first["msg"].removeprefix("Value error, ")
        line = line_of(root, loc)
        raise PolicyError(f"{path}:{line}: {where}: {reason}") from e


def line_of(node: yaml.Node | None, loc: Sequence[int | str]) -> int:
    """1-based line of the YAML node at `loc` (or of its nearest existing parent)."""
    line = node.start_mark.line + 1 if node is not None else 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == str(part)), None)
            if child is None:
                key = next((k for k, _ in node.value if k.value == str(part)), None)
                return key.start_mark.line + 1 if key is not None else line
            node = child
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
        else:
            return line
        line = node.start_mark.line + 1
    return line
