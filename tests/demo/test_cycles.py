"""`make demo`'s live loop through one full cycle of its scenarios, Alice approving every plan
and undoing the first scenario's transaction in the workspace's page in Chromium: each scenario
ends as the README says, the lab is never put back under an open incident, and no message
breaks the message rules (`lab.slack.lint`). Three cycles: `benchmarks/demo_cycles.py
--browser` (docs/benchmarks/demo-cycles.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require_binary
from tests.demo.cycles import EXPECTED, play


@pytest.mark.timeout(900)
def test_one_cycle_in_the_browser_ends_as_the_readme_says(tmp_path: Path) -> None:
    chromium = require_binary("chromium")
    run = play(tmp_path / "demo", cycles=1, chromium=chromium)
    (tmp_path / "transcript.txt").write_text(run.transcript)
    assert {e.scenario: e.outcome for e in run.ended} == EXPECTED, "\n".join(run.lines)
    assert run.resets_under_open == []
    assert run.problems == [], "\n".join(run.problems)
