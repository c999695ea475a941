"""`make demo`'s live loop through one full cycle of its scenarios, Alice approving every plan
and undoing the first scenario's transaction: each scenario ends as the README says, the lab is
never put back under an open incident, and no message breaks the message rules
(`lab.slack.lint`). Three cycles: `benchmarks/demo_cycles.py` (docs/benchmarks/demo-cycles.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.demo.cycles import EXPECTED, play


@pytest.mark.xfail(
    run=False,
    reason="known broken since the fail-closed merge (issue 18 stays open): with incidents that "
    "close only once their alerts stop and escalations that stay open while they fire, the "
    "one-cycle run hangs past its timeout; not yet diagnosed. benchmarks/demo_cycles.py is the "
    "same driver.",
)
@pytest.mark.timeout(900)
def test_one_cycle_ends_as_the_readme_says(tmp_path: Path) -> None:
    run = play(tmp_path / "demo", cycles=1)
    (tmp_path / "transcript.txt").write_text(run.transcript)
    assert {e.scenario: e.outcome for e in run.ended} == EXPECTED, "\n".join(run.lines)
    assert run.resets_under_open == []
    assert run.problems == [], "\n".join(run.problems)
