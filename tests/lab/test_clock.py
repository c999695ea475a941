"""The stepped lab clock: each advance runs the tick callbacks once per step."""

from __future__ import annotations

from datetime import datetime

import pytest

from lab.clock import LAB_EPOCH, LabClock


def _ticks(clock: LabClock) -> list[float]:
    seen: list[float] = []

    def record(now: datetime) -> None:
        seen.append((now - LAB_EPOCH).total_seconds())

    clock.on_tick(record)
    return seen


def test_advance_ticks_at_the_clock_step_unless_told_otherwise() -> None:
    clock = LabClock(stepped=True, tick_s=1.0)
    seen = _ticks(clock)
    clock.advance(3)
    assert seen == [1.0, 2.0, 3.0]
    clock.advance(12, tick_s=5.0)  # a coarser step for this call only; the last is shorter
    assert seen[3:] == [8.0, 13.0, 15.0]
    clock.advance(2)
    assert seen[6:] == [16.0, 17.0]
    assert clock.elapsed() == 17.0


def test_a_step_that_is_not_positive_is_refused() -> None:
    clock = LabClock(stepped=True)
    with pytest.raises(ValueError, match="tick_s"):
        clock.advance(5, tick_s=0)
    assert clock.elapsed() == 0.0
