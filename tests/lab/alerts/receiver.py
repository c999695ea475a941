"""A webhook receiver on 127.0.0.1:0 (aiohttp, in its own thread): records every JSON body it
is sent, and answers with the status codes it is told to (then 200)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web


class Receiver:
    def __init__(self, path: str = "/alerts/alertmanager") -> None:
        self.path = path
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fail_with: list[int] = []  # status codes to answer first, one per request
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def _handle(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        with self._lock:
            if self.fail_with:
                return web.Response(status=self.fail_with.pop(0))
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
        return web.Response(text="ok")

    def start(self) -> Receiver:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)

            async def serve() -> None:
                app = web.Application()
                app.router.add_post(self.path, self._handle)
                self._runner = web.AppRunner(app, access_log=None)
                await self._runner.setup()
                site = web.TCPSite(self._runner, "127.0.0.1", 0)
                await site.start()
                server = site._server
                assert server is not None
                port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
                self.url = f"http://127.0.0.1:{port}{self.path}"

            loop.run_until_complete(serve())
            ready.set()
            loop.run_forever()
            assert self._runner is not None
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="test-webhook-receiver", daemon=True)
        self._thread.start()
        assert ready.wait(10), "the receiver did not start"
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def received(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.bodies)

    def wait_for(
        self, check: Callable[[dict[str, Any]], bool], *, timeout_s: float
    ) -> dict[str, Any] | None:
        """The first body received that passes `check`, waiting up to `timeout_s` (wall)."""
        deadline = time.monotonic() + timeout_s
        while True:
            for body in self.received():
                if check(body):
                    return body
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
