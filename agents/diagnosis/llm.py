"""The `LanguageModel` port: one turn of a tool-using conversation, in our own types.

The Claude reasoner speaks only these values; `agents.adapters.anthropic_model.AnthropicModel`
translates them to and from the Messages API. No SDK type crosses this boundary, so a test
stand-in, another vendor or a recorded transcript can take the model's place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from agents.model import JsonObject


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    name: str
    description: str
    input_schema: JsonObject


@dataclass(frozen=True, slots=True, kw_only=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    id: str
    name: str
    input: JsonObject


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    call_id: str
    content: str
    is_error: bool = False


Part = TextPart | ToolCall | ToolResult


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    role: Role
    parts: tuple[Part, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """The model's turn: text and/or tool calls, why it stopped, and what it cost."""

    parts: tuple[TextPart | ToolCall, ...]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [p for p in self.parts if isinstance(p, ToolCall)]

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))


class LanguageModel(Protocol):
    """A chat model with tool use. Raises `agents.errors.ModelUnavailable` when the API
    fails after the adapter's bounded retries."""

    @property
    def name(self) -> str: ...

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
    ) -> Reply: ...
