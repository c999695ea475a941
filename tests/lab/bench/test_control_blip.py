"""Issue 13's bench control: a benign release of one service, then a brief pod-deletion blip
on another (`control-hotel-release-then-blip`). Run headless as the bench runs it, the loop
must end with zero writes: a recent change with no symptom of its own justifies nothing, and
a blip that has cleared by planning time gets no plan.

The bench session runs the full loop under `autonomous`, whose executed set includes
everything `auto-low-risk` would run, so zero writes here is zero writes under auto-low-risk.
"""

from __future__ import annotations

import pytest

from lab.bench import SUITE_DIR, BenchConfig, load_suite, parse_agents, run_one

SCENARIO = "control-hotel-release-then-blip"


@pytest.mark.timeout(600)
def test_a_benign_release_and_a_blip_end_with_zero_writes() -> None:
    [loaded] = load_suite(SUITE_DIR).select(SCENARIO).scenarios
    result = run_one(loaded, parse_agents("stratus")[0], BenchConfig(seed=13))
    assert result.error is None, result.error
    text = "\n".join(result.events)
    assert "Deployment/recommendation: image" in text and ":1.1 (kubectl set image)" in text, text
    assert "deleted (kubectl delete pod)" in text, text
    print(
        f"\n{SCENARIO}: incidents {result.incidents}, transactions {result.attempts}, "
        f"writes {result.actions}, writes while healthy {result.writes_while_healthy}, "
        f"plans {list(result.plans)}, "
        f"outcome {result.outcome}"
    )
    assert result.actions == 0, f"Stratus wrote {result.actions} time(s): {result.outcome}"
    assert result.attempts == 0
    assert result.writes_while_healthy == 0
