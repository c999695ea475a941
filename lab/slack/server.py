"""The workspace's HTTP server, running its own event loop on a background thread.

One aiohttp application serves everything Slack's hosts would: the Web API (`/api/`), the
Socket Mode endpoint (`/link/`), file upload URLs and file downloads, `response_url`s,
permalinks, and the web page with its live-update socket. Tests and the demo talk to it only
through `SlackWorkspace`, which hands coroutines to this loop with `run`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from aiohttp import web

from lab.serving import ThreadedSite
from lab.slack.api.endpoint import WebApi
from lab.slack.api.files import receive_upload
from lab.slack.delivery.dispatcher import Dispatcher
from lab.slack.delivery.socket_mode import SocketHub
from lab.slack.errors import ApiError
from lab.slack.interactions import Interactions
from lab.slack.responses import apply, redeem
from lab.slack.store import WorkspaceState
from lab.slack.web.routes import Page

logger = logging.getLogger(__name__)

T = TypeVar("T")

MAX_UPLOAD_BYTES = 50 * 1024 * 1024


class WorkspaceServer:
    def __init__(
        self,
        state: WorkspaceState,
        *,
        api: WebApi,
        hub: SocketHub,
        dispatcher: Dispatcher,
        interactions: Interactions,
    ) -> None:
        self.state = state
        self.api = api
        self.hub = hub
        self.dispatcher = dispatcher
        self.interactions = interactions
        self.page = Page(state, hub=hub, dispatcher=dispatcher, interactions=interactions)
        self._site: ThreadedSite | None = None
        self.port = 0

    # ------------------------------------------------------------------ app

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_UPLOAD_BYTES)
        app.router.add_route("*", "/api/{method}", self.api.handle)
        app.router.add_get("/link/", self.hub.handle)
        app.router.add_post("/upload/v1/{key}", self._upload)
        app.router.add_post("/response/{token}", self._response)
        app.router.add_get("/files-pri/{team_file}/{name}", self._file)
        app.router.add_get("/files/{user}/{file_id}/{name}", self._file)
        app.router.add_get("/archives/{channel}/{p}", self._archive)
        self.page.register(app.router)
        return app

    async def _upload(self, request: web.Request) -> web.Response:
        if request.content_type == "multipart/form-data":
            form = await request.post()
            part = next((v for v in form.values() if isinstance(v, web.FileField)), None)
            data = part.file.read() if part is not None else b""
        else:
            data = await request.read()
        if not receive_upload(self.state, request.match_info["key"], data):
            return web.Response(status=404, text="upload URL unknown or already completed")
        return web.Response(text=f"OK - {len(data)}")

    async def _response(self, request: web.Request) -> web.Response:
        try:
            if request.content_type == "application/json":
                body = await request.json()
            else:
                form = await request.post()
                body = json.loads(str(form.get("payload", "{}")))
            if not isinstance(body, dict):
                raise ApiError("invalid_payload", status=400)
            record = redeem(self.state, request.match_info["token"])
            with self.state.lock:
                events = apply(self.state, record, body)
        except json.JSONDecodeError:
            return web.json_response({"ok": False, "error": "invalid_payload"}, status=400)
        except ApiError as e:
            return web.json_response(e.body(), status=e.status if e.status != 200 else 400)
        self.dispatcher.emit(events)
        return web.json_response({"ok": True})

    async def _file(self, request: web.Request) -> web.Response:
        file_id = (
            request.match_info.get("file_id") or request.match_info["team_file"].split("-")[-1]
        )
        with self.state.lock:
            file = self.state.files.get(file_id)
            data = file.data if file is not None and file.completed else None
            mimetype = file.mimetype if file is not None else ""
            name = file.name if file is not None else ""
        if data is None:
            raise web.HTTPNotFound()
        headers = {}
        if request.query.get("download"):
            headers["Content-Disposition"] = f'attachment; filename="{name}"'
        return web.Response(body=data, content_type=mimetype, headers=headers)

    async def _archive(self, request: web.Request) -> web.Response:
        p = request.match_info["p"].removeprefix("p")
        ts = f"{p[:-6]}.{p[-6:]}"
        thread = request.query.get("thread_ts", "")
        raise web.HTTPFound(f"/#/{request.match_info['channel']}/{thread or ts}")

    # ------------------------------------------------------------------ lifecycle

    def start(self, host: str, port: int) -> int:
        self._site = ThreadedSite(
            self._app,
            name="slack-workspace",
            host=host,
            port=port,
            on_startup=self._startup,
            on_shutdown=self._shutdown,
        )
        try:
            self._site.start()
        except Exception as e:
            logger.exception("the Slack workspace could not start on %s:%s", host, port)
            self._site = None
            raise RuntimeError("the Slack workspace could not start") from e
        self.port = self._site.port
        return self.port

    async def _startup(self) -> None:
        self.page.bind(asyncio.get_running_loop())

    async def _shutdown(self) -> None:
        await self.page.close()
        await self.hub.close()
        await self.dispatcher.close()

    def stop(self) -> None:
        if self._site is not None:
            self._site.stop()
            self._site = None

    def run(self, coroutine: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """Run a coroutine on the server's loop and wait for its result (from another thread)."""
        if self._site is None:
            coroutine.close()
            raise RuntimeError("the Slack workspace is not running; call start() first")
        return self._site.run(coroutine, timeout=timeout)

    def call_soon(self, callback: Any, *args: Any) -> None:
        """Schedule a plain callback on the loop from any thread (no-op once stopped)."""
        if self._site is not None:
            self._site.call_soon(callback, *args)
