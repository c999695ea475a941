"""The bot's HTTP server: aiohttp on its own thread and event loop, bound to the configured
host and port (never 0.0.0.0 unless configured so — Bolt's own `app.start()` would bind
every interface). Handlers that block (storage, Bolt) run in a thread pool, so the loop
always answers health checks."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from aiohttp import web

logger = logging.getLogger(__name__)

#: Alertmanager groups can be large; Slack requests are small.
MAX_BODY_BYTES = 8 * 1024 * 1024


class HttpServer:
    def __init__(self, app: web.Application, *, host: str, port: int) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.port = 0

    def start(self, timeout_s: float = 10.0) -> int:
        """Serve in a background thread; returns the bound port."""
        self._thread = threading.Thread(target=self._serve, name="stratus-http", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise RuntimeError("the HTTP server did not start in time")
        if self._error is not None:
            raise self._error
        return self.port

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._bind())
        except OSError as e:
            self._error = e
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            if self._runner is not None:
                loop.run_until_complete(self._runner.cleanup())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _bind(self) -> None:
        runner = web.AppRunner(self._app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        await site.start()
        self._runner = runner
        server = site._server  # aiohttp keeps the bound sockets here
        sockets = getattr(server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1]) if sockets else self._port
        logger.info("HTTP endpoints on http://%s:%s", self._host, self.port)

    def stop(self, timeout_s: float = 10.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if loop.is_running():
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)
        self._thread = None


def blocking_pool(workers: int = 8) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stratus-http-work")
