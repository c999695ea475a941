"""Serving the API in a background thread with its own event loop.

The official client is synchronous, so tests and the bench call it from their own thread while
the server runs here; `stop()` ends open watches, closes the listening socket and joins the
thread, leaving no sockets or threads behind.
"""

from __future__ import annotations

import asyncio

from lab.kube.server.app import ApiServer
from lab.serving import ThreadedSite


class ServerThread:
    def __init__(self, server: ApiServer, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = server
        self._site = ThreadedSite(
            server.application,
            name="lab-kube-apiserver",
            host=host,
            port=port,
            on_shutdown=self._close_watches,
            reuse_address=True,
        )

    @property
    def url(self) -> str:
        return self._site.url

    def start(self) -> str:
        if self._site.running:
            return self.url
        try:
            self._site.start()
        except OSError as e:
            raise RuntimeError("the lab API server failed to start") from e
        self._server.server_address = f"{self._site.host}:{self._site.port}"
        return self.url

    async def _close_watches(self) -> None:
        self._server.close_watches()
        await asyncio.sleep(0)  # let the watch handlers see their end before the runner goes

    def end_watches(self) -> None:
        """End every open watch stream (on the server's loop; callable from any thread)."""
        self._site.call_soon(self._server.close_watches)

    def stop(self) -> None:
        self._site.stop()
