"""Issue 13's outage matrix, CI sample: the real loop on the lab with one outage switched on
in one phase, for a seeded Latin diagonal of the 5 × 5 matrix (every outage and every phase
once). Each cell must end aborted, held or still waiting — committed only on a sustain window
wholly measured after the outage — with Slack saying nothing healthy while the alert fires,
no undo entry lost, and the bot still serving. `benchmarks/outage_matrix.py` runs all 25 cells
and writes docs/outage-matrix.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.outage import Outage, Phase, run_cell, sample_cells


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize(("outage", "phase"), sample_cells(), ids=str)
def test_an_outage_never_ends_in_a_blind_commit(
    tmp_path: Path, outage: Outage, phase: Phase
) -> None:
    result = run_cell(tmp_path, outage, phase)
    print(
        f"\n{outage.value} during {phase.value} (outage switched on in {result.phase_seen}): "
        f"{result.end}; transactions {result.transactions}; {result.wall_s:.0f} s; "
        f"last message: {result.last_message!r}"
    )
    assert "missed" not in result.phase_seen, f"the loop never reached {phase.value}"
    assert result.violations == [], "\n".join(result.violations)


def test_the_sample_covers_every_row_and_column() -> None:
    cells = sample_cells()
    assert {o for o, _ in cells} == set(Outage) and {p for _, p in cells} == set(Phase)
