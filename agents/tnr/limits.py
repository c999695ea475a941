"""The bounds of a transaction (DESIGN section 3, rule 4) and its validation windows."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class TnrLimits:
    max_actions: int = 5  # K
    deadline_s: float = 600.0  # Δ: writes and validation must finish within it
    settle_timeout_s: float = 180.0  # rollouts must converge within this, else validate anyway
    settle_min_s: float = 5.0  # endpoints and caches need a moment even with nothing to roll
    sustain_s: float = 60.0  # the window in which μ_after is measured
    #: The window of μ_before: short, so that it says how the scope is doing *now* — a long
    #: one would still hold the healthy minutes before a fault and understate it.
    before_window_s: float = 15.0
    poll_s: float = 5.0
    lock_ttl_s: float = 30.0
    lock_wait_s: float = 120.0  # how long a transaction waits for a busy scope
    #: Abort a transaction that leaves an unhealthy scope no better: TNR permits committing it
    #: (μ_after ≤ μ_before), but a change that does not help should not stay in production.
    require_progress: bool = True

    def __post_init__(self) -> None:
        if self.max_actions < 1:
            raise ValueError("K (max_actions) must be ≥ 1")
        if self.deadline_s <= 0 or self.sustain_s < 0 or self.poll_s <= 0:
            raise ValueError("Δ, the sustain window and the poll interval must be positive")
        if self.lock_ttl_s <= self.poll_s:
            raise ValueError("the lock TTL must exceed the poll interval, or the lease lapses")
