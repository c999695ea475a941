"""The lab's HTTP stand-ins, each served from a thread of its own.

The official Kubernetes client, the Slack SDK and the Prometheus scraper are synchronous or in
other processes, so every stand-in (the API server, the metrics exporter, the fault control,
the Slack workspace) runs an aiohttp application on an event loop in a daemon thread, and the
caller's thread goes on. `ThreadedSite` is that one pattern: `start()` returns once the socket
listens (or raises the bind error), `stop()` runs the owner's shutdown on the loop, cleans the
runner up and joins the thread, leaving no socket or thread behind.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from aiohttp import web

logger = logging.getLogger(__name__)

T = TypeVar("T")

Hook = Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


class ThreadedSite:
    def __init__(
        self,
        application: Callable[[], web.Application],
        *,
        name: str,
        host: str = "127.0.0.1",
        port: int = 0,
        on_startup: Hook = _nothing,
        on_shutdown: Hook = _nothing,
        reuse_address: bool | None = None,
    ) -> None:
        """`application` is built on the loop (handlers that bind to it may); `on_startup`
        runs there before the socket opens, `on_shutdown` before the runner is cleaned up."""
        self._application = application
        self._name = name
        self._host = host
        self._port = port
        self._on_startup = on_startup
        self._on_shutdown = on_shutdown
        self._reuse_address = reuse_address
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.host = host
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}" if self.port else ""

    def start(self) -> str:
        """Serve; the base URL (`http://127.0.0.1:PORT`) once the socket listens."""
        if self._thread is not None:
            return self.url
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._open())
            except Exception as e:  # noqa: BLE001 - the thread's outer boundary: start() raises it
                failure.append(e)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._close())
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name=self._name, daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            self._loop = None
            raise failure[0]
        logger.debug("%s serving at %s", self._name, self.url)
        return self.url

    async def _open(self) -> None:
        await self._on_startup()
        self._runner = web.AppRunner(
            self._application(), access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port, reuse_address=self._reuse_address)
        await site.start()
        address = self._runner.addresses[0]
        self.host, self.port = str(address[0]), int(address[1])

    async def _close(self) -> None:
        try:
            await self._on_shutdown()
        finally:
            if self._runner is not None:
                await self._runner.cleanup()

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Schedule a plain callback on the loop from any thread (nothing once stopped)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(callback, *args)

    def run(self, coroutine: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """Run a coroutine on the loop and wait for its result (from another thread)."""
        loop = self._loop
        if loop is None or self._thread is None:
            coroutine.close()
            raise RuntimeError(f"{self._name} is not running; call start() first")
        if self._thread is threading.current_thread():
            coroutine.close()
            raise RuntimeError(f"{self._name}: cannot wait for its own loop from inside it")
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None

    def stop(self, *, timeout_s: float = 10.0) -> None:
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        if not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)
        if thread.is_alive():
            logger.warning("%s did not stop within %s s", self._name, timeout_s)
        self._thread = None
        self._loop = None
