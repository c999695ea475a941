"""The page's routes: static files, the per-user snapshot, user actions, live updates.

The page is plain HTML and JavaScript shipped inside the package (no build step, no external
assets). It asks `/ui/state` for what the chosen user sees, sends what that user does to
`/ui/act` (the same `Interactions` the Python API uses, so a click in the browser and
`ws.click` in a test are one code path), and listens on `/ui/live` for a version number that
changes whenever the workspace does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from importlib import resources
from typing import Any

from aiohttp import WSCloseCode, web

from lab.slack.delivery.dispatcher import Dispatcher
from lab.slack.delivery.outcome import Delivery
from lab.slack.delivery.socket_mode import SocketHub
from lab.slack.emoji import emoji_script
from lab.slack.errors import InteractionError
from lab.slack.interactions import Interactions
from lab.slack.store import WorkspaceState
from lab.slack.web.snapshot import snapshot

logger = logging.getLogger(__name__)

_STATIC = {
    "app.js": "application/javascript",
    "blocks.js": "application/javascript",
    "style.css": "text/css",
}
#: Coalesce bursts of changes (a transaction posting several updates) into one refresh.
_LIVE_DEBOUNCE_S = 0.05


def _static(name: str) -> bytes:
    return resources.files("lab.slack.web").joinpath("static", name).read_bytes()


class Page:
    def __init__(
        self,
        state: WorkspaceState,
        *,
        hub: SocketHub,
        dispatcher: Dispatcher,
        interactions: Interactions,
    ) -> None:
        self.state = state
        self.hub = hub
        self.dispatcher = dispatcher
        self.interactions = interactions
        self._sockets: dict[web.WebSocketResponse, asyncio.Queue[int]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        state.on_change(self._changed)

    def register(self, router: web.UrlDispatcher) -> None:
        router.add_get("/", self._index)
        router.add_get("/static/{name}", self._asset)
        router.add_get("/ui/state", self._state)
        router.add_post("/ui/act", self._act)
        router.add_get("/ui/live", self._live)

    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(body=_static("index.html"), content_type="text/html")

    async def _asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name == "emoji.js":
            return web.Response(
                body=emoji_script(), content_type="application/javascript", charset="utf-8"
            )
        if name not in _STATIC:
            raise web.HTTPNotFound()
        return web.Response(body=_static(name), content_type=_STATIC[name])

    async def _state(self, request: web.Request) -> web.Response:
        body = snapshot(
            self.state,
            user_id=request.query.get("user", ""),
            channel_id=request.query.get("channel", ""),
            transport=self.dispatcher.transport.value,
            connected=self.hub.connected,
        )
        return web.json_response(body)

    async def _act(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        try:
            delivery = await self._perform(body)
        except InteractionError as e:
            return web.json_response(
                {"ok": False, "error": e.code, "message": e.message, "errors": e.errors}
            )
        result: dict[str, Any] = {"ok": True}
        if delivery is not None:
            result.update(acked=delivery.acked, error=delivery.error)
        return web.json_response(result)

    async def _perform(self, body: dict[str, Any]) -> Delivery | None:
        act = self.interactions
        kind = body.get("action")
        user = str(body.get("user", ""))
        if kind == "command":
            return await act.slash_command(
                user, str(body["command"]), str(body.get("text", "")), str(body["channel"])
            )
        if kind == "message":
            await act.post_as_user(
                user, str(body["channel"]), str(body["text"]), body.get("thread_ts") or None
            )
            return None
        if kind == "click":
            return await act.click(
                user,
                str(body["channel"]),
                str(body["ts"]),
                str(body["action_id"]),
                body.get("value"),
                block_id=body.get("block_id"),
            )
        if kind == "view_click":
            return await act.click_in_view(
                user,
                str(body["view_id"]),
                str(body["action_id"]),
                body.get("value"),
                inputs=body.get("inputs") or {},
                block_id=body.get("block_id"),
            )
        if kind == "submit":
            return await act.submit_view(user, str(body["view_id"]), body.get("inputs") or {})
        if kind == "close":
            return await act.close_view(user, str(body["view_id"]))
        if kind == "reload":
            await act.reload_client(user)
            return None
        if kind == "home":
            return await act.open_app_home(user)
        if kind == "join":
            await act.join_channel(user, str(body["channel"]))
            return None
        raise InteractionError("unknown_action", f"the page sent an unknown action {kind!r}")

    # ------------------------------------------------------------------ live updates

    def _changed(self, version: int) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed in between
            loop.call_soon_threadsafe(self._fan_out, version)

    def _fan_out(self, version: int) -> None:
        for queue in self._sockets.values():
            if queue.empty():
                queue.put_nowait(version)

    async def _live(self, request: web.Request) -> web.StreamResponse:
        self._loop = asyncio.get_running_loop()
        ws = web.WebSocketResponse(heartbeat=20.0)
        await ws.prepare(request)
        queue: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
        self._sockets[ws] = queue
        sender = asyncio.create_task(self._send_versions(ws, queue))
        try:
            await ws.send_json({"version": self.state.version})
            async for _message in ws:
                pass  # the page only listens; reading keeps close frames flowing
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            self._sockets.pop(ws, None)
        return ws

    async def _send_versions(self, ws: web.WebSocketResponse, queue: asyncio.Queue[int]) -> None:
        while not ws.closed:
            await queue.get()
            await asyncio.sleep(_LIVE_DEBOUNCE_S)
            with contextlib.suppress(ConnectionError):
                await ws.send_json({"version": self.state.version})

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    async def close(self) -> None:
        for ws in list(self._sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server stopping")
