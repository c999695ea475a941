"""The journal's watch threads, for the bot: one per watched kind and covered namespace.

Each thread follows the pattern of client-go's reflector: list (through the reader) and
reconcile, then watch from the newest resourceVersion it has, resuming from the last event's
resourceVersion every time the server ends the watch. A watch the server refuses as too old
(410 Gone / Expired) or any other non-transient error leads to a fresh list; transient errors
back off (doubling, capped) and resume. Replayed events are harmless: the journal records
only differences.

`stop()` sets a flag and joins the threads. A thread blocked in a watch notices it when the
server ends the watch, so a watch's `timeout_s` bounds how long stopping can take; the
threads are daemons, so an unfinished one never holds the process open.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from agents.errors import ClusterError, Forbidden, TransientError
from agents.journal.journal import ChangeJournal
from agents.journal.kinds import WatchedKind
from agents.model import KubeObject
from agents.ports import ChangeWatcher, ClusterReader
from storage import StorageError

logger = logging.getLogger(__name__)

#: A watch that ends this quickly without an event is treated like an error: a server that
#: answers at once (or a broken proxy) must not make the thread spin.
_MIN_WATCH_S = 1.0


def _gone(error: ClusterError) -> bool:
    text = str(error)
    return "(HTTP 410)" in text or "Expired" in text or "too old resource version" in text


def newest_resource_version(objects: Sequence[KubeObject]) -> str | None:
    """The largest resourceVersion among `objects` when they are all numbers (as etcd's
    are), else None: resourceVersions are opaque, and a watch without one starts with the
    current state, which the journal takes as replays."""
    versions = [o.resource_version for o in objects]
    if not versions or not all(v and v.isdigit() for v in versions):
        return None
    return max(versions, key=lambda v: int(v or 0))


class JournalWatcher:
    def __init__(
        self,
        *,
        journal: ChangeJournal,
        watcher: ChangeWatcher,
        reader: ClusterReader,
        timeout_s: int = 60,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
    ) -> None:
        self._journal = journal
        self._watcher = watcher
        self._reader = reader
        self._timeout_s = timeout_s
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        if self._threads:
            raise RuntimeError("the journal watcher is already running")
        self._stop.clear()
        for namespace in self._journal.namespaces:
            for kind in self._journal.kinds:
                thread = threading.Thread(
                    target=self._run,
                    args=(kind, namespace),
                    name=f"journal-{kind.kind.lower()}-{namespace}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop every thread; True when all of them ended within `timeout_s`."""
        self._stop.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            logger.warning("journal watcher: still running after %ss: %s", timeout_s, alive)
        self._threads = []
        return not alive

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def _run(self, kind: WatchedKind, namespace: str) -> None:
        resource_version: str | None = None
        listed = False
        backoff = self._backoff_s
        while not self._stop.is_set():
            try:
                if not listed:
                    objects = self._reader.list_objects(
                        api_version=kind.api_version, kind=kind.kind, namespace=namespace
                    )
                    self._journal.reconcile(namespace, kind, objects)
                    resource_version = newest_resource_version(objects)
                    listed = True
                started, delivered = time.monotonic(), 0
                for event_type, obj in self._watcher.watch(
                    api_version=kind.api_version,
                    kind=kind.kind,
                    namespace=namespace,
                    resource_version=resource_version,
                    timeout_seconds=self._timeout_s,
                ):
                    if self._stop.is_set():
                        return
                    delivered += 1
                    if event_type != "BOOKMARK":
                        self._journal.observe(event_type, obj)
                    resource_version = obj.resource_version or resource_version
                backoff = self._backoff_s
                if delivered == 0 and time.monotonic() - started < _MIN_WATCH_S:
                    self._stop.wait(self._backoff_s)
            except TransientError as e:
                logger.info("journal watch of %s in %s: %s; retrying", kind.kind, namespace, e)
                backoff = self._pause(backoff)
            except ClusterError as e:
                listed = False  # start over from a fresh list
                if _gone(e):
                    logger.info(
                        "journal watch of %s in %s expired; relisting", kind.kind, namespace
                    )
                    continue
                level = logging.ERROR if isinstance(e, Forbidden) else logging.WARNING
                logger.log(level, "journal watch of %s in %s: %s", kind.kind, namespace, e)
                backoff = self._pause(backoff)
            except StorageError as e:
                # The event was not recorded: resume from the last recorded one.
                logger.warning("journal of %s in %s cannot write: %s", kind.kind, namespace, e)
                backoff = self._pause(backoff)
            except Exception:
                # The thread's outer boundary: log the traceback and keep the journal alive.
                logger.exception("journal watch of %s in %s failed", kind.kind, namespace)
                listed = False
                backoff = self._pause(backoff)

    def _pause(self, backoff: float) -> float:
        self._stop.wait(backoff)
        return min(backoff * 2, self._max_backoff_s)
