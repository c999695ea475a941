"""Validation of a transaction (DESIGN section 3, rule 5): settle, then sustain.

*Settle* waits until the rollouts the transaction started have converged (observedGeneration
caught up, every replica updated and available). *Sustain* then watches the scope for a window
and measures μ over that window only, so errors from before the fix do not count against it.
Both loops keep the writer lease alive and respect the transaction's deadline Δ.

Fail closed (rule 8): a workload that cannot be read has not converged, and a sustain window
counts only when every sample in it was completely measured. An incomplete sample restarts
the window; measuring goes on until Δ, which then raises `DeadlineExceeded` (the engine
aborts). `sustain` returns only a complete figure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.errors import ClusterError, StratusError
from agents.model import ObjectRef, Scope
from agents.ports import Clock, ClusterReader
from agents.severity import Severity, SeverityMeter
from agents.tnr.limits import TnrLimits
from agents.tnr.lock import WriterLock

logger = logging.getLogger(__name__)

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet"})

#: Settle's pending list when the workloads could not be read and none was watched by name.
UNREADABLE = "(workloads unreadable)"


class DeadlineExceeded(StratusError):
    """The transaction's bounded risk window Δ ran out."""

    def __init__(self, message: str, *, unknown: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        #: What could not be measured when Δ ran out (empty: the window was just too short).
        self.unknown = unknown


@dataclass(frozen=True, slots=True, kw_only=True)
class Settled:
    converged: bool
    waited_s: float
    pending: tuple[str, ...]  # workloads still rolling when settle gave up


class Validator:
    def __init__(
        self,
        *,
        reader: ClusterReader,
        meter: SeverityMeter,
        clock: Clock,
        limits: TnrLimits,
    ) -> None:
        self._reader = reader
        self._meter = meter
        self._clock = clock
        self._limits = limits

    def _tick(self, lock: WriterLock, deadline: float) -> None:
        if self._clock.monotonic() >= deadline:
            raise DeadlineExceeded(f"Δ = {self._limits.deadline_s:.0f}s ran out")
        self._clock.sleep(self._limits.poll_s)
        lock.keepalive()

    def settle(
        self,
        scope: Scope,
        targets: Sequence[ObjectRef],
        lock: WriterLock,
        deadline: float,
        *,
        on_tick: Callable[[], None] | None = None,
    ) -> Settled:
        watched = {t.name for t in targets if t.kind in WORKLOAD_KINDS}
        started = self._clock.monotonic()
        pending: tuple[str, ...] = ()
        while True:
            waited = self._clock.monotonic() - started
            if waited >= self._limits.settle_min_s:
                try:
                    states = [
                        w for w in self._reader.workloads(scope.namespace) if w.name in watched
                    ]
                    pending = tuple(sorted(w.name for w in states if not w.converged))
                except ClusterError as e:
                    # Unknown is not converged: every watched workload is still pending.
                    logger.warning("settle of %s: cannot read workloads: %s", scope.key, e)
                    pending = tuple(sorted(watched)) or (UNREADABLE,)
                if not pending:
                    return Settled(converged=True, waited_s=waited, pending=())
                if waited >= self._limits.settle_timeout_s:
                    return Settled(converged=False, waited_s=waited, pending=pending)
            self._tick(lock, deadline)
            if on_tick is not None:
                on_tick()

    def sustain(
        self,
        scope: Scope,
        lock: WriterLock,
        deadline: float,
        *,
        known_trouble: frozenset[str] = frozenset(),
        on_sample: Callable[[Severity], None] | None = None,
    ) -> Severity:
        started = self._clock.monotonic()
        since = self._clock.now()
        window = max(1, int(self._limits.sustain_s))
        unknown: tuple[str, ...] = ()  # what the latest sample could not read
        # The window begins with a complete sample, never with a mere point in time: until one
        # comes (at the start, and after a blind sample) nothing has been seen yet.
        blind = True
        last = started  # when the latest complete sample (or the window) began to count
        # Samples come every poll_s; a longer silence (a hung call) is a gap nobody measured.
        gap_s = max(3 * self._limits.poll_s, self._limits.sustain_s / 4)
        while True:
            while self._clock.monotonic() - started < self._limits.sustain_s:
                try:
                    self._tick(lock, deadline)
                except DeadlineExceeded as e:
                    if not unknown:
                        raise
                    raise DeadlineExceeded(
                        f"{e}; the sustain window was not wholly measured: "
                        f"cannot read {', '.join(unknown)}",
                        unknown=unknown,
                    ) from e
                elapsed = max(1, int(self._clock.monotonic() - started))
                sample = self._meter.measure(
                    scope, window_s=elapsed, alerts_since=since, known_trouble=known_trouble
                )
                if on_sample is not None:
                    on_sample(sample)
                unknown = sample.unknown
                now = self._clock.monotonic()
                if not sample.complete:
                    logger.warning(
                        "sustain of %s: cannot measure %s; the window starts again",
                        scope.key,
                        sample.unknown_text(),
                    )
                    started, blind = now, True
                elif blind or now - last > gap_s:
                    # The window starts at the first complete sample after a blind one, or
                    # after one that took so long (a call that hung until the source came
                    # back) that the state in between was never seen: either way less than a
                    # whole window would otherwise be measured.
                    if not blind:
                        logger.warning(
                            "sustain of %s: %.0fs without a sample; the window starts again",
                            scope.key,
                            now - last,
                        )
                    started, blind = now, False
                last = now
            final = self._meter.measure(
                scope, window_s=window, alerts_since=since, known_trouble=known_trouble
            )
            unknown = final.unknown
            if final.complete and self._clock.monotonic() - last <= gap_s:
                return final
            if final.complete:
                # The final read itself hung: what happened meanwhile was not seen.
                started = last = self._clock.monotonic()
                continue
            logger.warning(
                "sustain of %s: final figure incomplete (%s); the window starts again",
                scope.key,
                final.unknown_text(),
            )
            if on_sample is not None:
                on_sample(final)
            started, blind = self._clock.monotonic(), True
