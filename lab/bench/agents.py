"""The agents the bench compares, all built by the same `build_brain` wiring: only the engine's
options and the policy's attempts differ, so a difference in scores is the difference TNR
(validation, rollback, retries) makes — not a different planner or diagnoser.

* `stratus`: the full loop: validate, roll back a failed transaction, retry per the policy's
  attempts (3, the product default).
* `naive`: executes the first plan it proposes; no validation, no undo, one attempt.
* `no-undo`: validates, but commits a failed transaction instead of rolling it back.
* `no-retry`: full TNR, one attempt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from agents.tnr import EngineOptions
from lab.bench.errors import UnknownAgent


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSpec:
    name: str
    description: str
    options: EngineOptions
    attempts: int


AGENTS: Mapping[str, AgentSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            AgentSpec(
                name="stratus",
                description="full loop with TNR: validate + rollback + 3 attempts",
                options=EngineOptions(validate=True, rollback=True),
                attempts=3,
            ),
            AgentSpec(
                name="naive",
                description="runs its first plan: no validation, no undo, 1 attempt",
                options=EngineOptions(validate=False, rollback=False),
                attempts=1,
            ),
            AgentSpec(
                name="no-undo",
                description="validates but never rolls back, 3 attempts",
                options=EngineOptions(validate=True, rollback=False),
                attempts=3,
            ),
            AgentSpec(
                name="no-retry",
                description="full TNR, 1 attempt",
                options=EngineOptions(validate=True, rollback=True),
                attempts=1,
            ),
        )
    }
)

DEFAULT_AGENTS = ("stratus", "naive", "no-undo", "no-retry")


def parse_agents(text: str | Sequence[str]) -> tuple[AgentSpec, ...]:
    """`stratus,naive` → their specs, in the order given, without repeats."""
    names = text.split(",") if isinstance(text, str) else list(text)
    chosen: list[AgentSpec] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        spec = AGENTS.get(name)
        if spec is None:
            raise UnknownAgent(f"unknown agent {name!r}; agents: {', '.join(AGENTS)}")
        if spec not in chosen:
            chosen.append(spec)
    if not chosen:
        raise UnknownAgent(f"no agent given; agents: {', '.join(AGENTS)}")
    return tuple(chosen)
