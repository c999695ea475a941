"""Watches: a chunked stream of `{"type": ..., "object": ...}` lines.

Semantics of the real server: without a resourceVersion (or "0") the stream opens with an
ADDED event per existing object; with one, it replays the retained changes after it, or sends
an ERROR event carrying a 410 Expired Status when that history is gone. An object that stops
matching a label or field selector is reported DELETED, one that starts matching ADDED.
`timeoutSeconds` ends the stream; `sendInitialEvents` ends the initial burst with a BOOKMARK.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from agents.model import JsonObject
from lab.kube.errors import Gone
from lab.kube.jsonutil import dumps
from lab.kube.resources import ResourceType
from lab.kube.selectors import FieldSelector, LabelSelector
from lab.kube.store import Change, Store, Stored

logger = logging.getLogger(__name__)


#: Put on a session's queue to end it (server shutdown).
CLOSE: tuple[str, JsonObject] = ("CLOSE", {})


@dataclass(slots=True)
class Filter:
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector

    def matches(self, obj: JsonObject | None) -> bool:
        if obj is None:
            return False
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)


class WatchSession:
    """Receives store changes on any thread and hands the matching ones to its event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, flt: Filter) -> None:
        self.loop = loop
        self.filter = flt
        self.queue: asyncio.Queue[tuple[str, JsonObject]] = asyncio.Queue()
        self.closed = False

    def event_for(self, change: Change) -> tuple[str, JsonObject] | None:
        now_matches = change.type != "DELETED" and self.filter.matches(change.obj)
        was_matching = self.filter.matches(change.old)
        if change.type == "DELETED":
            return ("DELETED", change.obj) if was_matching else None
        if now_matches and was_matching:
            return ("MODIFIED", change.obj)
        if now_matches:
            return ("ADDED", change.obj)
        if was_matching:
            return ("DELETED", change.obj)
        return None

    def deliver(self, change: Change) -> None:
        if self.closed:
            return
        event = self.event_for(change)
        if event is None:
            return
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)
        except RuntimeError:  # the loop is closed: the server stopped
            self.closed = True

    def close(self) -> None:
        if self.closed:
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.queue.put_nowait, CLOSE)


async def pump(
    session: WatchSession,
    write: Callable[[str, JsonObject], Awaitable[None]],
    *,
    timeout_s: float,
) -> None:
    """Forward queued events to `write` until the timeout or CLOSE."""
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        try:
            event = await asyncio.wait_for(session.queue.get(), timeout=remaining)
        except TimeoutError:
            return
        if event is CLOSE:
            return
        await write(*event)


@dataclass(frozen=True, slots=True)
class WatchOptions:
    filter: Filter
    since: int | None  # replay after this resourceVersion; None: start with current objects
    timeout_s: float
    initial_events: bool  # end the initial ADDED burst with a BOOKMARK


async def serve_watch(
    request: web.Request,
    *,
    rt: ResourceType,
    store: Store,
    sessions: set[WatchSession],
    options: WatchOptions,
    present: Callable[[str, JsonObject], JsonObject],
) -> web.StreamResponse:
    """Stream a watch until its timeout, the client leaving, or the server stopping."""
    session = WatchSession(asyncio.get_running_loop(), options.filter)
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    gone: Gone | None = None
    snapshot: list[Stored] = []
    replay: list[Change] = []
    # Snapshot and subscribe atomically: no change is missed or seen twice.
    with store.lock:
        current_rv = store.resource_version
        if options.since is None:
            snapshot = [
                s
                for s in store.items(rt.stored_kind, options.filter.namespace)
                if options.filter.matches(s.obj)
            ]
        try:
            replay = store.subscribe(rt.stored_kind, session, options.since)
        except Gone as e:
            gone = e
    sessions.add(session)

    async def write(event_type: str, obj: JsonObject) -> None:
        line = dumps({"type": event_type, "object": present(event_type, obj)}) + b"\n"
        await response.write(line)

    try:
        await response.prepare(request)
        if gone is not None:
            await write("ERROR", gone.status())
            return response
        for stored in snapshot:
            await write("ADDED", stored.obj)
        if options.initial_events:
            await write(
                "BOOKMARK",
                {
                    "kind": rt.kind,
                    "apiVersion": rt.api_version,
                    "metadata": {
                        "resourceVersion": str(current_rv),
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    },
                },
            )
        for change in replay:
            event = session.event_for(change)
            if event is not None:
                await write(*event)
        await pump(session, write, timeout_s=options.timeout_s)
        await response.write_eof()
    except ConnectionError:
        pass  # the client went away
    finally:
        session.closed = True
        store.unsubscribe(rt.stored_kind, session)
        sessions.discard(session)
    return response
