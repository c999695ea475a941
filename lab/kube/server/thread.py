"""Serving the API in a background thread with its own event loop.

The official client is synchronous, so tests and the bench call it from their own thread while
the server runs here; `stop()` ends open watches, closes the listening socket and joins the
thread, leaving no sockets or threads behind.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from aiohttp import web

from lab.kube.server.app import ApiServer

logger = logging.getLogger(__name__)


class ServerThread:
    def __init__(self, server: ApiServer, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = server
        self._host = host
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.url = ""

    def start(self) -> str:
        if self._thread is not None:
            return self.url
        self._thread = threading.Thread(target=self._run, name="lab-kube-apiserver", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError("the lab API server failed to start") from self._error
        return self.url

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._open())
        except OSError as e:
            self._error = e
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._close())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _open(self) -> None:
        self._runner = web.AppRunner(
            self._server.application(),
            access_log=None,
            handle_signals=False,
            shutdown_timeout=1.0,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port, reuse_address=True)
        await site.start()
        sockets = self._runner.addresses
        host, port = sockets[0][0], sockets[0][1]
        self._server.server_address = f"{host}:{port}"
        self.url = f"http://{host}:{port}"

    async def _close(self) -> None:
        self._server.close_watches()
        await asyncio.sleep(0)
        if self._runner is not None:
            await self._runner.cleanup()

    def end_watches(self) -> None:
        """End every open watch stream (on the server's loop; callable from any thread)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._server.close_watches)

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if self._thread.is_alive():
            logger.warning("the lab API server thread did not stop within 10 s")
        self._thread = None
