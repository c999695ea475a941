"""The Claude reasoner: a bounded tool-use loop over the read-only tools, ending in a
validated structured answer.

Named steps, as pydantic-ai spells an agent run: *prompt* (the budgeted evidence, the offline
pre-analysis, similar incidents — all redacted), then *turns* (the model calls read tools;
each result carries a status, errors quote what was asked), then *answer* (the
`submit_diagnosis` tool's input, validated against `answer.FinalAnswer` and against the
namespace's services; a malformed answer goes back to the model as a tool error to fix).
Steps and tokens are budgeted and raise `StepBudgetExceeded` / `TokenBudgetExceeded`; the
diagnoser then falls back to the offline verdict and says why.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.diagnosis.answer import CATEGORIES, AnswerError, FinalAnswer, validate
from agents.diagnosis.budget import render
from agents.diagnosis.llm import (
    LanguageModel,
    Message,
    Part,
    Reply,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from agents.diagnosis.offline import Ranking
from agents.diagnosis.ports import Redactor
from agents.diagnosis.tools import SUBMIT, Status, Toolbox, ToolOutcome
from agents.errors import StepBudgetExceeded, TokenBudgetExceeded
from agents.model import Alert, Evidence, Incident, SimilarIncident

logger = logging.getLogger(__name__)

SYSTEM = """You are Stratus, an SRE diagnosing a Kubernetes incident in one namespace. You \
may only read; never propose commands. Find the ROOT-CAUSE service (the workload whose own \
fault explains the others' symptoms: follow the call graph downward to the deepest anomalous \
service) and its fault category, as LEVEL/TYPE from this list: {categories}.

Principles (docs/taxonomy.md):
- desired replicas lowered by a person, pods killed without a spec change, or an image tag \
the registry lacks (ImagePullBackOff) -> virtualization/operation_error
- a Service selector/targetPort matching no serving pod/port; pods unschedulable \
(nodeSelector, affinity, taints, requests); a ResourceQuota refusing pods; OOMKilled below the \
working set; CPU throttling at the limit -> virtualization/misconfiguration
- latency or loss to a service whose pods are healthy and unchanged -> virtualization/network
- a new image crashing at start (panic in the previous container log) -> application/code_defect
- a command naming a missing binary, a wrong application setting (ConfigMap/env, e.g. a \
database host that does not resolve), a feature flag turned on -> application/misconfiguration
- a database refusing credentials ("not authorized", "authentication failed") -> \
application/authentication on the database

Always ask first what changed just before it broke. Cite evidence by its [index]. Name the \
object and field that look wrong in `suspect` (e.g. kind Service, name geo, field \
spec.ports[0].targetPort). Use the tools when the evidence is not enough; when a tool \
returns status error, read the error and correct your input. Finish by calling \
{submit} exactly once with the root cause, up to four ranked alternatives, calibrated \
confidences and a one-paragraph summary."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaudeSettings:
    max_steps: int = 12
    token_budget: int = 60_000
    max_tokens_per_turn: int = 2048


@dataclass(slots=True)
class Tally:
    """Tokens and steps spent, kept by the caller so that a budget error still reports them."""

    tokens: int = 0
    steps: int = 0
    tool_calls: list[str] = field(default_factory=list)


class ClaudeReasoner:
    def __init__(self, model: LanguageModel, settings: ClaudeSettings, redactor: Redactor) -> None:
        self.model = model
        self.settings = settings
        self.redactor = redactor

    @property
    def name(self) -> str:
        return f"claude:{self.model.name}"

    def reason(
        self,
        *,
        incident: Incident,
        alerts: Sequence[Alert],
        evidence: Sequence[Evidence],
        hints: Ranking,
        similar: Sequence[SimilarIncident],
        toolbox: Toolbox,
        tally: Tally,
    ) -> FinalAnswer:
        system = SYSTEM.format(categories=", ".join(CATEGORIES), submit=SUBMIT)
        messages: list[Message] = [
            Message(
                role=Role.USER,
                parts=(TextPart(text=self._prompt(incident, alerts, evidence, hints, similar)),),
            )
        ]
        tools = toolbox.specs()
        services = sorted(toolbox.obs.service_names)
        while True:
            if tally.steps >= self.settings.max_steps:
                raise StepBudgetExceeded(
                    f"no final answer after {tally.steps} steps (budget {self.settings.max_steps})"
                )
            reply = self.model.complete(
                system=system,
                messages=messages,
                tools=tools,
                max_tokens=self.settings.max_tokens_per_turn,
            )
            tally.steps += 1
            tally.tokens += reply.usage.total
            if tally.tokens > self.settings.token_budget:
                raise TokenBudgetExceeded(
                    f"{tally.tokens} tokens spent (budget {self.settings.token_budget})"
                )
            messages.append(Message(role=Role.ASSISTANT, parts=reply.parts))
            results, answer = self._turn(reply, toolbox, tally, services, len(evidence))
            if answer is not None:
                logger.info(
                    "claude diagnosis of %s after %d steps, %d tokens",
                    incident.id,
                    tally.steps,
                    tally.tokens,
                )
                return answer
            messages.append(Message(role=Role.USER, parts=results))

    def _turn(
        self, reply: Reply, toolbox: Toolbox, tally: Tally, services: list[str], count: int
    ) -> tuple[tuple[Part, ...], FinalAnswer | None]:
        calls = reply.tool_calls
        if not calls:
            nudge = f"Call {SUBMIT} with your final answer (JSON matching its schema)."
            return (TextPart(text=nudge),), None
        results: list[Part] = []
        answer: FinalAnswer | None = None
        for call in calls:
            tally.tool_calls.append(call.name)
            if call.name == SUBMIT:
                outcome, answer = self._submit(call, services, count)
            else:
                outcome = toolbox.call(call.name, call.input)
            results.append(
                ToolResult(
                    call_id=call.id,
                    content=outcome.render(self.redactor),
                    is_error=outcome.status is Status.ERROR,
                )
            )
        return tuple(results), answer

    def _submit(
        self, call: ToolCall, services: list[str], count: int
    ) -> tuple[ToolOutcome, FinalAnswer | None]:
        try:
            answer = validate(call.input, services=services, evidence_count=count)
        except AnswerError as e:
            return (
                ToolOutcome(
                    status=Status.ERROR, error="invalid diagnosis: " + "; ".join(e.problems)
                ),
                None,
            )
        return ToolOutcome(status=Status.SUCCESS, data="diagnosis recorded"), answer

    def _prompt(
        self,
        incident: Incident,
        alerts: Sequence[Alert],
        evidence: Sequence[Evidence],
        hints: Ranking,
        similar: Sequence[SimilarIncident],
    ) -> str:
        lines = [
            f"Incident {incident.id}: {incident.title}",
            f"Namespace {incident.scope.namespace} in cluster {incident.scope.cluster}; opened "
            f"{incident.opened_at.isoformat()}; alerting service: {incident.service or 'unknown'}.",
            "Alerts: " + "; ".join(f"{a.name} {dict(a.labels)}" for a in alerts[:10]),
            "",
            f"Evidence ({len(evidence)} items, most relevant first):",
            *(render(i, e) for i, e in enumerate(evidence)),
            "",
            "Rule-based pre-analysis (may be wrong; check it):",
            *(
                f"- {c.service} {c.category} {c.confidence:.2f}: {c.explanation}"
                + (f" [suspect {c.suspect.describe()}]" if c.suspect else "")
                for c in hints.candidates[:3]
            ),
        ]
        if similar:
            lines += ["", "Similar past incidents:"]
            lines += [
                f"- {s.title} (score {s.score:.2f}): root cause {s.root_cause_service} "
                f"{s.category}; resolved by {s.resolution}"
                for s in similar
            ]
        return self.redactor("\n".join(lines))


def describe_answer(answer: FinalAnswer) -> str:
    return json.dumps(answer.model_dump(), sort_keys=True)
