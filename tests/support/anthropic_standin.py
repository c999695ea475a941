"""A local stand-in of the Anthropic Messages API: scripted turns, every request recorded.

Like pydantic-ai's function models, a test scripts what "the model" says: each turn is a
reply (content blocks and usage), an HTTP error (status, headers such as Retry-After), or a
function of the request that returns either (so a turn can react to the tool results it was
sent). The server is real aiohttp on 127.0.0.1:0 in a background thread; the production
`AnthropicModel` talks to it through the real SDK with `base_url`. Requests are recorded
(headers and JSON body) so tests can assert on what was sent, e.g. that no secret reached a
prompt.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    content: list[JsonObject]
    stop_reason: str = "end_turn"
    input_tokens: int = 100
    output_tokens: int = 50
    #: How long "the model" thinks before it answers (a slow model holds an incident in
    #: DIAGNOSING; the server keeps serving other requests meanwhile).
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "scripted failure"
    kind: str = "api_error"


Script = Turn | Failure | Callable[[JsonObject], "Turn | Failure"]

_ids = itertools.count(1)


def text(words: str, **usage: int) -> Turn:
    return Turn(content=[{"type": "text", "text": words}], **usage)


def tool_use(name: str, args: JsonObject, *, call_id: str | None = None, **usage: int) -> Turn:
    block = {
        "type": "tool_use",
        "id": call_id or f"toolu_{next(_ids):04d}",
        "name": name,
        "input": args,
    }
    return Turn(content=[block], stop_reason="tool_use", **usage)


@dataclass(slots=True, kw_only=True)
class Recorded:
    headers: dict[str, str]
    body: JsonObject

    def tool_results(self) -> list[JsonObject]:
        """The tool_result blocks of the last user message."""
        last = self.body["messages"][-1]
        content = last.get("content")
        return (
            [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )


class MessagesStandIn:
    def __init__(self, script: list[Script] | None = None) -> None:
        self.script: list[Script] = list(script or [])
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, *turns: Script) -> None:
        with self._lock:
            self.script.extend(turns)

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = int(server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    async def _messages(self, request: web.Request) -> web.Response:
        body = await request.json()
        with self._lock:
            self.requests.append(Recorded(headers=dict(request.headers), body=body))
            step = (
                self.script.pop(0)
                if self.script
                else Failure(status=500, message="script exhausted")
            )
        turn = step(body) if callable(step) else step
        if isinstance(turn, Failure):
            payload = {"type": "error", "error": {"type": turn.kind, "message": turn.message}}
            return web.json_response(payload, status=turn.status, headers=turn.headers)
        await asyncio.sleep(turn.delay_s)
        return web.json_response(
            {
                "id": f"msg_{next(_ids):06d}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "stand-in"),
                "content": turn.content,
                "stop_reason": turn.stop_reason,
                "stop_sequence": None,
                "usage": {"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens},
            }
        )

    def prompts_text(self) -> str:
        """Everything sent to the model, as one string (system, messages, tool results)."""
        return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in self.requests)


@contextmanager
def messages_standin(*script: Script) -> Iterator[MessagesStandIn]:
    server = MessagesStandIn(list(script))
    server.start()
    try:
        yield server
    finally:
        server.stop()
