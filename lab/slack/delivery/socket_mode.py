"""Socket Mode: the app dials in, the workspace pushes envelopes and waits for acks.

The protocol as Slack speaks it: `apps.connections.open` hands out a one-time `ws://` URL;
on connect the server sends `hello`; each envelope carries an `envelope_id` the app must echo
(`{"envelope_id": ..., "payload": ...}`) within the ack timeout; before closing a connection
the server sends `disconnect` (reason `refresh_requested`, `warning`, `link_disabled`) and the
client opens a new one. With several connections open, envelopes are spread over them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass

from aiohttp import WSCloseCode, WSMsgType, web

from agents.model import JsonObject
from lab.slack.store import WorkspaceState

logger = logging.getLogger(__name__)

#: How long a connection told to go away may keep its acks coming before it is closed (it is
#: closed sooner once the app has opened its replacement).
DISCONNECT_GRACE_S = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AckResult:
    acked: bool
    payload: JsonObject | None = None
    latency_s: float | None = None
    error: str = ""


@dataclass(slots=True, kw_only=True)
class _Connection:
    id: int
    ws: web.WebSocketResponse
    draining: bool = False


class SocketHub:
    def __init__(self, state: WorkspaceState) -> None:
        self.state = state
        self._connections: list[_Connection] = []
        self._acks: dict[str, asyncio.Future[JsonObject | None]] = {}
        self._turn = 0
        self._opened = 0
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def connected(self) -> int:
        """Open connections that take new envelopes."""
        return sum(1 for c in self._connections if not c.draining and not c.ws.closed)

    @property
    def connections_opened(self) -> int:
        return self._opened

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not self.state.redeem_socket_ticket(request.query.get("ticket", "")):
            raise web.HTTPUnauthorized(text="invalid or used ticket")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._opened += 1
        connection = _Connection(id=self._opened, ws=ws)
        self._connections.append(connection)
        logger.info("socket mode connection %d opened", connection.id)
        try:
            await ws.send_json(self._hello())
            # The app has reconnected: connections told to go away need no more grace.
            for old in [c for c in self._connections if c.draining and not c.ws.closed]:
                await old.ws.close(code=WSCloseCode.GOING_AWAY, message=b"replaced")
            self.state.touch()
            async for message in ws:
                if message.type is WSMsgType.TEXT:
                    self._on_text(message.data)
        finally:
            self._connections.remove(connection)
            logger.info("socket mode connection %d closed", connection.id)
            self.state.touch()
        return ws

    def _hello(self) -> JsonObject:
        return {
            "type": "hello",
            "num_connections": self.connected + 1,
            "debug_info": {
                "host": "applink-lab",
                "build_number": 1,
                "approximate_connection_time": 18060,
            },
            "connection_info": {"app_id": self.state.config.app_id},
        }

    def _on_text(self, data: str) -> None:
        try:
            body = json.loads(data)
        except json.JSONDecodeError:
            logger.warning("socket mode: a frame that is not JSON: %.200s", data)
            return
        envelope_id = body.get("envelope_id") if isinstance(body, dict) else None
        future = self._acks.get(str(envelope_id))
        if future is None or future.done():
            logger.info("socket mode: ack for unknown or expired envelope %s", envelope_id)
            return
        payload = body.get("payload")
        future.set_result(payload if isinstance(payload, dict) else None)

    def _pick(self) -> _Connection | None:
        live = [c for c in self._connections if not c.draining and not c.ws.closed]
        if not live:
            return None
        self._turn += 1
        return live[self._turn % len(live)]

    async def send(self, envelope: JsonObject, *, timeout: float) -> AckResult:
        connection = self._pick()
        if connection is None:
            return AckResult(acked=False, error="dispatch_failed")
        envelope_id = str(envelope["envelope_id"])
        future: asyncio.Future[JsonObject | None] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = future
        started = time.monotonic()
        try:
            await connection.ws.send_str(json.dumps(envelope))
            payload = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return AckResult(acked=False, error="operation_timeout")
        except ConnectionError:
            return AckResult(acked=False, error="dispatch_failed")
        finally:
            self._acks.pop(envelope_id, None)
        return AckResult(acked=True, payload=payload, latency_s=time.monotonic() - started)

    async def disconnect(self, reason: str) -> int:
        """Ask every connection to reconnect (Slack's `disconnect`), closing each after a
        grace period. Returns how many were told."""
        told = 0
        for connection in list(self._connections):
            if connection.draining or connection.ws.closed:
                continue
            connection.draining = True
            message = {
                "type": "disconnect",
                "reason": reason,
                "debug_info": {"host": "applink-lab"},
            }
            with contextlib.suppress(ConnectionError):
                await connection.ws.send_json(message)
                told += 1
            task = asyncio.create_task(self._close_later(connection))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self.state.touch()
        return told

    async def _close_later(self, connection: _Connection) -> None:
        await asyncio.sleep(DISCONNECT_GRACE_S)
        await connection.ws.close(code=WSCloseCode.GOING_AWAY, message=b"refresh")

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for connection in list(self._connections):
            await connection.ws.close(code=WSCloseCode.GOING_AWAY, message=b"server stopping")
