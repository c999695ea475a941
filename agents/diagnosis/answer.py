"""The Claude reasoner's final answer: a pydantic schema (the `submit_diagnosis` tool's input)
and its checks against what the diagnosis knows (services, evidence indices)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agents.model import Category, FaultLevel, FaultType

CATEGORIES = (
    *(
        f"{level}/{kind}"
        for level in (FaultLevel.VIRTUALIZATION, FaultLevel.APPLICATION)
        for kind in FaultType
        if kind is not FaultType.NONE
    ),
    "application/none",
)


class SuspectAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="Kubernetes kind of the object that looks wrong, e.g. Service")
    name: str
    field: str = Field(description="field path, e.g. spec.ports[0].targetPort or data.DB_HOST")
    current: str | None = None
    last_known_good: str | None = None


class HypothesisAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    service: str = Field(min_length=1, description="root-cause service (workload name)")
    category: str = Field(
        description="level/type from the taxonomy, e.g. virtualization/misconfiguration"
    )
    confidence: float = Field(ge=0.0, le=1.0)
    explanation: str = Field(min_length=1, max_length=2000)
    evidence: list[int] = Field(
        default_factory=list, description="indices of the evidence it rests on"
    )
    suspect: SuspectAnswer | None = None

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        try:
            Category.parse(value)
        except ValueError:
            raise ValueError(f"must be one of {', '.join(CATEGORIES)}") from None
        return value


class FinalAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    root_cause: HypothesisAnswer
    alternatives: list[HypothesisAnswer] = Field(default_factory=list, max_length=4)
    summary: str = Field(min_length=1, max_length=1000)

    @property
    def hypotheses(self) -> list[HypothesisAnswer]:
        return [self.root_cause, *self.alternatives]


def schema() -> dict[str, Any]:
    return FinalAnswer.model_json_schema()


def validate(data: Any, *, services: Collection[str], evidence_count: int) -> FinalAnswer:
    """Parse and check; raises `AnswerError` with messages the model can act on."""
    try:
        answer = FinalAnswer.model_validate(data)
    except ValidationError as e:
        raise AnswerError(
            [
                f"{'.'.join(str(p) for p in err['loc']) or '(input)'}: {err['msg']}"
                for err in e.errors()
            ]
        ) from e
    problems = []
    for i, h in enumerate(answer.hypotheses):
        where = "root_cause" if i == 0 else f"alternatives[{i - 1}]"
        if services and h.service not in services:
            problems.append(
                f"{where}.service: {h.service!r} is not a service of this namespace "
                f"(known: {', '.join(sorted(services)[:40])})"
            )
        bad = [n for n in h.evidence if not 0 <= n < evidence_count]
        if bad:
            problems.append(f"{where}.evidence: {bad} out of range 0..{evidence_count - 1}")
    if problems:
        raise AnswerError(problems)
    return answer


class AnswerError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems
