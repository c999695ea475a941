"""`AnthropicModel`: the `LanguageModel` port over the Anthropic Messages API (anthropic SDK).

The only module that imports `anthropic`. It translates our message values to the API's
blocks and back, so no SDK type leaves this file, and it owns retries: the SDK's own retry
loop honours `Retry-After` without a cap (an overloaded API answering "retry after 600 s"
would stall a diagnosis for ten minutes), so the SDK is built with `max_retries=0` and an
explicit timeout, and this adapter retries 408/409/429/5xx/529 and connection errors itself,
waiting what `Retry-After` asks but never longer than `max_retry_wait_s`. When the retries are
spent it raises `ModelUnavailable`, and the diagnoser falls back to the offline reasoner.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
from anthropic._data import DEPRECATED_MODELS

from agents.diagnosis.llm import (
    Message,
    Part,
    Reply,
    TextPart,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from agents.errors import ModelUnavailable

logger = logging.getLogger(__name__)

#: A current model of the installed SDK's list (`anthropic.types.Model`), not deprecated.
DEFAULT_MODEL = "claude-sonnet-4-6"
RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


class AnthropicModel:
    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        max_retry_wait_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if model in DEPRECATED_MODELS:
            logger.warning(
                "model %s is deprecated (end of life %s); configure a current one",
                model,
                DEPRECATED_MODELS[model],
            )
        self._model = model
        self._max_retries = max_retries
        self._max_wait = max_retry_wait_s
        self._sleep = sleep
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0
        )

    @property
    def name(self) -> str:
        return self._model

    def close(self) -> None:
        self._client.close()

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
    ) -> Reply:
        body: dict[str, Any] = {
            "model": self._model,
            "system": system,
            "max_tokens": max_tokens,
            "messages": [_message(m) for m in messages],
            "tools": [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ],
        }
        attempt = 0
        while True:
            try:
                response = self._client.messages.create(**body)
            except anthropic.APIStatusError as e:
                if e.status_code not in RETRYABLE or attempt >= self._max_retries:
                    raise ModelUnavailable(
                        f"Messages API answered {e.status_code} after {attempt + 1} attempts: "
                        f"{e.api_message or e.message}"
                    ) from e
                wait = self._wait(attempt, e.response.headers)
            except anthropic.APIConnectionError as e:
                if attempt >= self._max_retries:
                    raise ModelUnavailable(
                        f"Messages API unreachable after {attempt + 1} attempts: {e}"
                    ) from e
                wait = self._wait(attempt, None)
            else:
                return _reply(response)
            attempt += 1
            logger.info("Messages API: retry %d in %.2f s", attempt, wait)
            self._sleep(wait)

    def _wait(self, attempt: int, headers: Any) -> float:
        """What Retry-After asks (ms or s), else exponential backoff; never above the cap."""
        asked: float | None = None
        if headers is not None:
            for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
                value = headers.get(name)
                if value is None:
                    continue
                try:
                    asked = float(value) * scale
                    break
                except ValueError:
                    continue
        wait = asked if asked is not None and asked >= 0 else 0.5 * (2**attempt)
        return min(wait, self._max_wait)


def _part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ToolCall):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.input}
    assert isinstance(part, ToolResult)
    return {
        "type": "tool_result",
        "tool_use_id": part.call_id,
        "content": part.content,
        "is_error": part.is_error,
    }


def _message(message: Message) -> dict[str, Any]:
    return {"role": str(message.role), "content": [_part(p) for p in message.parts]}


def _reply(response: Any) -> Reply:
    parts: list[TextPart | ToolCall] = []
    for block in response.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(TextPart(text=str(block.text)))
        elif kind == "tool_use":
            data = block.input if isinstance(block.input, dict) else {}
            parts.append(ToolCall(id=str(block.id), name=str(block.name), input=dict(data)))
    usage = getattr(response, "usage", None)
    return Reply(
        parts=tuple(parts),
        stop_reason=str(response.stop_reason or ""),
        usage=Usage(
            input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        ),
    )
