"""How long one call to the cluster or the metrics source may take, retries included.

A call made under the writer lock must end (answered or failed) well within the lease: a
client that may block for timeout × retries × backoff, unbounded, lets the lease run out under
a live writer (DESIGN section 3, rule 8). So each adapter makes at most `attempts` tries of at
most `timeout_s` each, without backoff sleeps or `Retry-After` waits, and its worst case is
`worst_case_s`. Start-up refuses settings whose worst case exceeds the lease divided by
`LEASE_SHARE` (`below_lease`).

A plain module beside the ports: the adapters apply it, the writer lock and the settings check
against it, and none of them needs the others to do so.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Every call made under the writer lock must end within the lease divided by this (worst case,
#: retries included); the heartbeat renews the lease that often, and a write starts only with
#: this share of the lease left.
LEASE_SHARE = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class CallDeadline:
    timeout_s: float = 5.0  # one try: connecting and reading the answer
    attempts: int = 2  # tries in all (1 = no retry)

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")

    @property
    def connect_s(self) -> float:
        """The share of a try spent connecting: a refused or unroutable address fails fast,
        leaving the rest of the try to a slow answer."""
        return min(2.0, self.timeout_s / 3)

    @property
    def read_s(self) -> float:
        return self.timeout_s - self.connect_s

    @property
    def worst_case_s(self) -> float:
        """The longest one call can block, every try timing out."""
        return self.timeout_s * self.attempts


def below_lease(deadline: CallDeadline, lease_s: float) -> str | None:
    """None when one call's worst case fits under the lease; else what is wrong, in words."""
    limit = lease_s / LEASE_SHARE
    if deadline.worst_case_s <= limit:
        return None
    return (
        f"one call may block {deadline.attempts} × {deadline.timeout_s:g}s = "
        f"{deadline.worst_case_s:g}s, more than the writer lease {lease_s:g}s / {LEASE_SHARE} "
        f"= {limit:g}s"
    )
