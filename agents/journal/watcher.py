"""The journal's watch threads, for the bot: one per watched kind and covered namespace.

Each thread follows client-go's reflector, and is meant to be a quiet client of a big cluster:

- **List, then watch from the list's resourceVersion.** Never from the newest item's: objects
  nobody touched for a while are older than the server's watch history, and a watch from their
  version is refused at once (410 Gone). Resuming from them re-listed in a tight loop.
- **Bookmarks** are asked for; a BOOKMARK moves the resume point on without a record.
- **A watch that ends normally** (the server's timeoutSeconds) is re-opened from the last
  resourceVersion seen, without a new list.
- **410 Gone** (`Expired`) means the resume point fell out of the history: list again, but
  after a jittered, exponentially growing pause (`backoff_s` doubling to `max_backoff_s`). A
  server that keeps refusing gets a request every minute at most, not a thousand a second.
- **Other errors** back off the same way (transient ones resume from the same version; the
  rest list again). The backoff is reset only by a healthy watch: one that delivered an event
  or stayed open at least `_MIN_WATCH_S`. A watch that ends at once without news is treated
  as an error, so nothing can make a thread spin.

Replayed events are harmless: the journal records only differences.

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
from collections.abc import Callable
from dataclasses import dataclass

from agents.errors import ClusterError, Expired, Forbidden, TransientError
from agents.journal.journal import ChangeJournal
from agents.journal.kinds import WatchedKind
from agents.ports import ChangeWatcher
from storage import StorageError

logger = logging.getLogger(__name__)

#: A watch that ends sooner than this without an event is not healthy: the thread pauses (with
#: growing backoff) before the next request, so a server that answers at once (or a broken
#: proxy) cannot make it spin.
_MIN_WATCH_S = 1.0


@dataclass(slots=True)
class _Backoff:
    """Exponential backoff with jitter: the n-th pause lies in [b/2, b] with
    b = min(initial * 2**n, ceiling). Jitter spreads the threads of many bots (and of many
    namespaces of one bot) that a server refused at the same moment."""

    initial_s: float
    ceiling_s: float
    jitter: Callable[[], float]  # uniform in [0, 1)
    current_s: float = 0.0

    def __post_init__(self) -> None:
        self.current_s = self.initial_s

    def next_pause(self) -> float:
        pause = self.current_s * (0.5 + 0.5 * self.jitter())
        self.current_s = min(self.current_s * 2, self.ceiling_s)
        return pause

    def reset(self) -> None:
        self.current_s = self.initial_s


class JournalWatcher:
    def __init__(
        self,
        *,
        journal: ChangeJournal,
        watcher: ChangeWatcher,
        timeout_s: int = 60,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._journal = journal
        self._watcher = watcher
        self._timeout_s = timeout_s
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._jitter = jitter
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

    def signal_stop(self) -> None:
        """Ask every thread to end, without waiting: each ends at its next event, pause or
        end of watch."""
        self._stop.set()

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
        backoff = _Backoff(
            initial_s=self._backoff_s, ceiling_s=self._max_backoff_s, jitter=self._jitter
        )
        while not self._stop.is_set():
            try:
                if not listed:
                    found = self._watcher.list_for_watch(
                        api_version=kind.api_version, kind=kind.kind, namespace=namespace
                    )
                    self._journal.reconcile(namespace, kind, found.items)
                    # No version (a server that gives none): the watch starts from "now"
                    # with the current objects as ADDED events, which the journal replays.
                    resource_version = found.resource_version
                    listed = True
                    if self._stop.is_set():
                        return
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
                if delivered or time.monotonic() - started >= _MIN_WATCH_S:
                    backoff.reset()  # a healthy watch: resume at once, no new list
                else:
                    self._stop.wait(backoff.next_pause())
            except Expired:
                listed = False  # the resume point fell out of the history: list again
                pause = backoff.next_pause()
                logger.info(
                    "journal watch of %s in %s expired; relisting in %.2fs",
                    kind.kind,
                    namespace,
                    pause,
                )
                self._stop.wait(pause)
            except TransientError as e:
                logger.info("journal watch of %s in %s: %s; retrying", kind.kind, namespace, e)
                self._stop.wait(
                    max(backoff.next_pause(), min(e.retry_after_s, self._max_backoff_s))
                )
            except ClusterError as e:
                listed = False  # start over from a fresh list
                level = logging.ERROR if isinstance(e, Forbidden) else logging.WARNING
                logger.log(level, "journal watch of %s in %s: %s", kind.kind, namespace, e)
                self._stop.wait(backoff.next_pause())
            except StorageError as e:
                # The event was not recorded: resume from the last recorded one.
                logger.warning("journal of %s in %s cannot write: %s", kind.kind, namespace, e)
                self._stop.wait(backoff.next_pause())
            except Exception:
                # The thread's outer boundary: log the traceback and keep the journal alive.
                logger.exception("journal watch of %s in %s failed", kind.kind, namespace)
                listed = False
                self._stop.wait(backoff.next_pause())
