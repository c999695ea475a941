"""Validation of a transaction (DESIGN section 3, rule 5): settle, then sustain.

*Settle* waits until the rollouts the transaction started have converged (observedGeneration
caught up, every replica updated and available). *Sustain* then watches the scope for a window
and measures μ over that window only, so errors from before the fix do not count against it.
Both loops keep the writer lease alive and respect the transaction's deadline Δ.
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


class DeadlineExceeded(StratusError):
    """The transaction's bounded risk window Δ ran out."""


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
                except ClusterError as e:
                    logger.warning("settle of %s: cannot read workloads: %s", scope.key, e)
                    states = []
                pending = tuple(sorted(w.name for w in states if not w.converged))
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
        while self._clock.monotonic() - started < self._limits.sustain_s:
            self._tick(lock, deadline)
            if on_sample is not None:
                elapsed = max(1, int(self._clock.monotonic() - started))
                on_sample(
                    self._meter.measure(
                        scope, window_s=elapsed, alerts_since=since, known_trouble=known_trouble
                    )
                )
        window = max(1, int(self._limits.sustain_s))
        return self._meter.measure(
            scope, window_s=window, alerts_since=since, known_trouble=known_trouble
        )
