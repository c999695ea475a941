"""Outages as stand-ins: a cluster or metrics source that stops answering during given windows
of the lab clock, the way an API behind a stopped TCP proxy does (every call fails fast with a
transient error). Outside the windows every call goes to the real thing."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.errors import MetricsUnavailable, TransientError
from agents.ports import Clock


@dataclass
class Outage:
    """Windows [start, end) of `clock.monotonic()` in which the source is down."""

    clock: Clock
    windows: list[tuple[float, float]] = field(default_factory=list)
    refused: int = 0  # calls refused so far

    def down_for(self, start_in_s: float, seconds: float = math.inf) -> Outage:
        now = self.clock.monotonic()
        self.windows.append((now + start_in_s, now + start_in_s + seconds))
        return self

    def end(self) -> None:
        self.windows.clear()

    @property
    def active(self) -> bool:
        now = self.clock.monotonic()
        return any(start <= now < end for start, end in self.windows)


class _Flaky:
    _error: Callable[[str], Exception]

    def __init__(self, inner: Any, outage: Outage) -> None:
        self._inner = inner
        self._outage = outage

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._outage.active:
                self._outage.refused += 1
                raise self._error(f"{name}: connection refused (outage)")
            return attr(*args, **kwargs)

        return call


class FlakyCluster(_Flaky):
    """A `ClusterReader` + `ClusterWriter` that refuses every call during the outage."""

    _error = TransientError

    @property
    def cluster_name(self) -> str:
        return str(self._inner.cluster_name)


class FlakyMetrics(_Flaky):
    """A `MetricsSource` that fails every query during the outage."""

    _error = MetricsUnavailable
