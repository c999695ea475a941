"""The reflector: keep a consumer current with one kind in one namespace, as client-go's does.

One loop per (kind, namespace), shared by the change journal's watch threads and the
`ClusterCache`'s stores. It is meant to be a quiet client of a big cluster:

- **List, then watch from the list's resourceVersion.** Never from the newest item's: objects
  nobody touched for a while are older than the server's watch history, and a watch from their
  version is refused at once (410 Gone). Resuming from them re-listed in a tight loop.
- **Bookmarks** are asked for; a BOOKMARK moves the resume point on and tells the consumer the
  stream is alive, without an object change.
- **A watch that ends normally** (the server's timeoutSeconds) is re-opened from the last
  resourceVersion seen, without a new list.
- **410 Gone** (`Expired`) means the resume point fell out of the history: list again, but
  after a jittered, exponentially growing pause (`backoff_s` doubling to `max_backoff_s`). A
  server that keeps refusing gets a request every minute at most, not a thousand a second.
- **Other errors** back off the same way (transient ones resume from the same version; the
  rest list again). The backoff is reset only by a healthy watch: one that delivered an event
  or stayed open at least `MIN_WATCH_S`. A watch that ends at once without news is treated
  as an error, so nothing can make a loop spin.

The consumer (`Sink`) hears every list, every event and every break (`lost`): a cache uses the
breaks to stop answering from data that may be stale until the stream is healthy again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from agents.errors import ClusterError, Expired, Forbidden, TransientError
from agents.model import KubeObject
from agents.ports import ChangeWatcher

logger = logging.getLogger(__name__)

#: A watch that ends sooner than this without an event is not healthy: the loop pauses (with
#: growing backoff) before the next request, so a server that answers at once (or a broken
#: proxy) cannot make it spin.
MIN_WATCH_S = 1.0


@dataclass(slots=True)
class Backoff:
    """Exponential backoff with jitter: the n-th pause lies in [b/2, b] with
    b = min(initial * 2**n, ceiling). Jitter spreads the loops of many bots (and of many
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


class Sink(Protocol):
    """What a reflector keeps current."""

    def replace(self, items: Sequence[KubeObject], resource_version: str | None) -> None:
        """Every object, from a fresh list."""
        ...

    def apply(self, event_type: str, obj: KubeObject) -> None:
        """One ADDED | MODIFIED | DELETED | BOOKMARK event (a BOOKMARK's object carries only
        a resourceVersion)."""
        ...

    def lost(self) -> None:
        """The stream broke: what the sink holds may miss changes until the next `replace`
        or event."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Reflection:
    """One loop's settings: what to follow and how patiently."""

    api_version: str
    kind: str
    namespace: str
    timeout_s: int = 60  # of each watch request (the server ends it then)
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    #: Errors the sink raises that mean "not recorded, try the same event again" (the
    #: journal's storage errors): back off and resume from the last version it took.
    sink_errors: tuple[type[Exception], ...] = ()
    #: List again after a transient break too, instead of resuming the watch: a cache that
    #: stops answering on `lost` is whole again only after a list (it cannot tell when a
    #: resumed stream has caught up).
    relist_after_break: bool = False


def reflect(
    source: ChangeWatcher,
    sink: Sink,
    spec: Reflection,
    stop: threading.Event,
    jitter: Callable[[], float],
) -> None:
    """Run until `stop` is set. Never raises: every failure is logged and backed off."""
    kind, namespace = spec.kind, spec.namespace
    backoff = Backoff(initial_s=spec.backoff_s, ceiling_s=spec.max_backoff_s, jitter=jitter)
    loop = _Loop(source=source, sink=sink, spec=spec, stop=stop, backoff=backoff)
    while not stop.is_set():
        try:
            if loop.step():
                return
        except Expired:
            sink.lost()
            loop.listed = False  # the resume point fell out of the history: list again
            pause = backoff.next_pause()
            logger.info("watch of %s in %s expired; relisting in %.2fs", kind, namespace, pause)
            stop.wait(pause)
        except TransientError as e:
            sink.lost()
            loop.listed = loop.listed and not spec.relist_after_break
            logger.info("watch of %s in %s: %s; retrying", kind, namespace, e)
            stop.wait(max(backoff.next_pause(), min(e.retry_after_s, spec.max_backoff_s)))
        except ClusterError as e:
            sink.lost()
            loop.listed = False  # start over from a fresh list
            level = logging.ERROR if isinstance(e, Forbidden) else logging.WARNING
            logger.log(level, "watch of %s in %s: %s", kind, namespace, e)
            stop.wait(backoff.next_pause())
        except spec.sink_errors as e:
            # Not recorded: resume from the last event the sink took.
            logger.warning("watch of %s in %s: the sink refused an event: %s", kind, namespace, e)
            stop.wait(backoff.next_pause())
        except Exception:
            # The loop's outer boundary: log the traceback and keep the loop alive.
            logger.exception("watch of %s in %s failed", kind, namespace)
            sink.lost()
            loop.listed = False
            stop.wait(backoff.next_pause())


@dataclass(slots=True, kw_only=True)
class _Loop:
    """One `reflect` loop and where it stands: the version to resume from, and whether a
    list must come first. Its steps raise; `reflect` handles what they raise."""

    source: ChangeWatcher
    sink: Sink
    spec: Reflection
    stop: threading.Event
    backoff: Backoff
    resource_version: str | None = None
    listed: bool = False

    def step(self) -> bool:
        """List if needed, then one watch request. True when `stop` was seen."""
        if not self.listed:
            self._list()
            if self.stop.is_set():
                return True
        return self._watch()

    def _list(self) -> None:
        # The list stays a local of this step: kept anywhere that lives as long as the watch
        # (a local of `reflect`, a field here), every store's last list would stay in memory
        # beside the store's own copy (68 MB at 2,000 pods).
        spec = self.spec
        found = self.source.list_for_watch(
            api_version=spec.api_version, kind=spec.kind, namespace=spec.namespace
        )
        self.sink.replace(found.items, found.resource_version)
        # No version (a server that gives none): the watch starts from "now" with
        # the current objects as ADDED events, which the sink takes again.
        self.resource_version = found.resource_version
        self.listed = True

    def _watch(self) -> bool:
        spec = self.spec
        started, delivered = time.monotonic(), 0
        for event_type, obj in self.source.watch(
            api_version=spec.api_version,
            kind=spec.kind,
            namespace=spec.namespace,
            resource_version=self.resource_version,
            timeout_seconds=spec.timeout_s,
        ):
            if self.stop.is_set():
                return True
            delivered += 1
            self.sink.apply(event_type, obj)
            self.resource_version = obj.resource_version or self.resource_version
        if delivered or time.monotonic() - started >= MIN_WATCH_S:
            self.backoff.reset()  # a healthy watch: resume at once, no new list
        else:
            self.sink.lost()
            self.listed = self.listed and not spec.relist_after_break
            self.stop.wait(self.backoff.next_pause())
        return False
