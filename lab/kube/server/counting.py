"""`CountingServer`: the lab's API server with an access log, for measuring what a client costs.

What a cluster operator would read in the API server's audit log and traffic graphs: every
request answered (method, path, query) and the bytes of its response body. A watch's bytes are
counted when its stream ends. `expire_watches` answers every watch with the ERROR event a real
server sends for a resourceVersion older than its history (410 Gone), to test that clients back
off instead of spinning.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from lab.kube.cluster import LabCluster
from lab.kube.errors import Gone
from lab.kube.jsonutil import dumps
from lab.kube.server.app import ApiServer


@dataclass(slots=True, kw_only=True)
class Seen:
    at: float  # time.monotonic() when the request arrived
    method: str
    path: str
    query: dict[str, str]
    bytes: int = 0  # of the response body, once it is complete
    done: bool = False
    #: aiohttp's writer for this response: its running byte count (headers included) lets a
    #: window count what a long watch sent inside it, not only when the watch ends.
    writer: Any = field(default=None, repr=False, compare=False)

    @property
    def sent(self) -> int:
        output = getattr(self.writer, "output_size", None)
        return int(output) if isinstance(output, int) else self.bytes

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")


@dataclass(slots=True)
class _Log:
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class CountingServer(ApiServer):
    def __init__(self, cluster: LabCluster) -> None:
        super().__init__(api=cluster.api, logs=cluster.logs)
        self.expire_watches = False
        self._access = _Log()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        seen = Seen(
            at=time.monotonic(),
            method=request.method,
            path=request.path,
            query=dict(request.query),
            writer=getattr(request, "_payload_writer", None),
        )
        with self._access.lock:
            self._access.seen.append(seen)
        if seen.watch and self.expire_watches:
            rv = seen.query.get("resourceVersion", "")
            status = Gone(f"too old resource version: {rv} ({self.api.store.resource_version})")
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            await response.prepare(request)
            await response.write(dumps({"type": "ERROR", "object": status.status()}) + b"\n")
            await response.write_eof()
        else:
            response = await super().handle(request)
        if isinstance(response, web.Response) and response.body is not None:
            body = response.body
            seen.bytes = len(body) if isinstance(body, bytes | bytearray) else 0
        else:
            seen.bytes = response.body_length
        seen.done = True
        return response

    @property
    def seen(self) -> list[Seen]:
        with self._access.lock:
            return list(self._access.seen)

    def requests(self, path_part: str = "", *, watch: bool | None = None) -> list[Seen]:
        return [s for s in self.seen if path_part in s.path and (watch is None or s.watch == watch)]

    def since(self, at: float) -> list[Seen]:
        return [s for s in self.seen if s.at >= at]

    def sent(self) -> list[int]:
        """Bytes sent so far for each request, in arrival order: the difference of two calls
        is what a time window cost, watches included."""
        return [s.sent for s in self.seen]
