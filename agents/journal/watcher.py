"""The journal's watch threads, for the bot: one per watched kind and covered namespace.

Each thread runs a reflector (`agents.cache.reflector`: list, then watch from the list's
resourceVersion, bookmarks, jittered backoff on 410 Gone and every other error, no spin) whose
sink is the journal: a list reconciles, an event is observed, a bookmark only moves the resume
point. Replayed events are harmless: the journal records only differences. A storage error
leaves the event unrecorded, and the thread resumes from the last one recorded.

`stop()` sets a flag and joins the threads. A thread blocked in a watch notices it when the
server ends the watch, so a watch's `timeout_s` bounds how long stopping can take;
`signal_stop()` sets the flag without waiting. The threads are daemons, so an unfinished one
never holds the process open.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.cache.cluster_cache import CACHED_KINDS, ClusterCache
from agents.cache.reflector import Reflection, reflect
from agents.journal.journal import ChangeJournal
from agents.journal.kinds import WatchedKind
from agents.model import KubeObject
from agents.ports import ChangeWatcher
from storage import StorageError

logger = logging.getLogger(__name__)

#: Backoff jitter from a private generator: the module's global one is shared with every
#: other thread (and Hypothesis, in the tests, treats a change to it as a strategy bug).
_JITTER = random.Random()


@dataclass(frozen=True, slots=True)
class _JournalSink:
    """The journal as a reflector's sink."""

    journal: ChangeJournal
    namespace: str
    kind: WatchedKind

    def replace(self, items: Sequence[KubeObject], resource_version: str | None) -> None:
        self.journal.reconcile(self.namespace, self.kind, items)

    def apply(self, event_type: str, obj: KubeObject) -> None:
        if event_type != "BOOKMARK":
            self.journal.observe(event_type, obj)

    def lost(self) -> None:
        """Nothing to forget: the next list or replayed events fill any gap."""


class JournalWatcher:
    def __init__(
        self,
        *,
        journal: ChangeJournal,
        watcher: ChangeWatcher,
        timeout_s: int = 60,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        jitter: Callable[[], float] = _JITTER.random,
        cache: ClusterCache | None = None,
    ) -> None:
        """With `cache`, the journal follows the cache's watches for the kinds it holds (one
        watch per kind and namespace serves both) and runs its own threads only for the
        others; the cache must be built with `sink_errors=(StorageError,)`."""
        self._journal = journal
        self._cache = cache
        self._subscribed: list[tuple[str, str, _JournalSink]] = []
        self._watcher = watcher
        self._timeout_s = timeout_s
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._jitter = jitter
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        if self._threads or self._subscribed:
            raise RuntimeError("the journal watcher is already running")
        self._stop.clear()
        for namespace in self._journal.namespaces:
            for kind in self._journal.kinds:
                if self._cache is not None and CACHED_KINDS.get(kind.kind) == kind.api_version:
                    sink = _JournalSink(self._journal, namespace, kind)
                    self._cache.subscribe(kind.kind, namespace, sink)
                    self._subscribed.append((kind.kind, namespace, sink))
                    continue
                thread = threading.Thread(
                    target=self._run,
                    args=(kind, namespace),
                    name=f"journal-{kind.kind.lower()}-{namespace}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()

    def signal_stop(self) -> None:
        """Ask every thread to end, without waiting: each ends at its next event, pause or
        end of watch."""
        self._stop.set()

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop every thread; True when all of them ended within `timeout_s`."""
        self._stop.set()
        if self._cache is not None:
            for kind, namespace, sink in self._subscribed:
                self._cache.unsubscribe(kind, namespace, sink)
        self._subscribed = []
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
        return bool(self._subscribed) or any(t.is_alive() for t in self._threads)

    def _run(self, kind: WatchedKind, namespace: str) -> None:
        reflect(
            self._watcher,
            _JournalSink(self._journal, namespace, kind),
            Reflection(
                api_version=kind.api_version,
                kind=kind.kind,
                namespace=namespace,
                timeout_s=self._timeout_s,
                backoff_s=self._backoff_s,
                max_backoff_s=self._max_backoff_s,
                sink_errors=(StorageError,),
            ),
            self._stop,
            self._jitter,
        )
