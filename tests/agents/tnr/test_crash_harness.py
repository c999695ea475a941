"""Every crash point of the write path ends in the pre-transaction state or a validated
committed state, with no undo entry lost."""

from __future__ import annotations

import pytest

from tests.agents.tnr.crash_harness import run_all, table


@pytest.mark.timeout(600)
def test_every_crash_point_recovers_to_a_consistent_end() -> None:
    rows = run_all()
    assert all(r.killed for r in rows), table(rows)
    assert all(r.ok for r in rows), table(rows)
