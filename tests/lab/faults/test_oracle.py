"""The mitigation oracle: passes on a healthy lab, fails while a fault holds, judges SLOs over
a window, and fails when a baseline workload was deleted or scaled to zero even though the
SLOs look fine."""

from __future__ import annotations

from collections.abc import Callable

from lab.faults import MitigationOracle, fault
from tests.lab.faults.conftest import HOTEL, SHOP, Lab

MakeLab = Callable[..., Lab]


def test_passes_on_a_healthy_lab(make_lab: MakeLab) -> None:
    for app in (HOTEL, SHOP):
        lab = make_lab(app, kubectl=False)
        injection = fault("no-fault").inject(lab.world)
        for _ in range(3):
            verdict = lab.check(injection)
            assert verdict.mitigated, (app, verdict.problems)
            assert verdict.summary() == "mitigated"
            lab.advance(20)


def test_fails_while_a_fault_holds_and_judges_slos_over_the_window(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL, kubectl=False)
    injection = fault("wrong-target-port").inject(lab.world)
    lab.advance(10)
    verdict = lab.check(injection)
    assert not verdict.mitigated
    # The pods and rollouts are fine: only the SLOs show this fault.
    assert all("Deployment/" not in p and "Pod/" not in p for p in verdict.problems)
    assert any(p.startswith("geo: ") and "of calls to it fail" in p for p in verdict.problems)
    assert any(p.startswith("frontend: ") for p in verdict.problems)
    assert verdict.summary().startswith("not mitigated: ")

    svc = lab.world.api.get("Service", HOTEL, "geo")
    assert svc is not None
    svc["spec"]["ports"][0]["targetPort"] = 8083
    lab.world.api.replace(svc, field_manager="test")
    lab.advance(5)
    assert max(e for e, _ in lab.signals().values()) == 0.0  # healed at once...
    assert not lab.check(injection).mitigated  # ...but the window still holds the errors
    lab.advance(35)
    assert lab.check(injection).mitigated
    # A longer window remembers longer.
    assert not MitigationOracle(injection, window_s=120).check(lab.world).mitigated


def test_fails_when_a_baseline_workload_is_scaled_to_zero_or_deleted(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP, kubectl=False)
    # The accounting consumer serves nobody: without it every SLO still holds.
    injection = fault("no-fault").inject(lab.world)
    lab.world.api.patch(
        "Deployment",
        SHOP,
        "accounting",
        {"spec": {"replicas": 0}},
        patch_type="merge",
        field_manager="a-careless-fix",
    )
    lab.advance(40)
    assert max(e for e, _ in lab.signals().values()) == 0.0
    verdict = lab.check(injection)
    assert verdict.problems == ("Deployment/accounting is scaled to zero (it had 1)",)

    lab.world.api.patch(
        "Deployment",
        SHOP,
        "accounting",
        {"spec": {"replicas": 1}},
        patch_type="merge",
        field_manager="test",
    )
    lab.world.api.delete("Deployment", SHOP, "fraud-detection")
    lab.advance(40)
    assert max(e for e, _ in lab.signals().values()) == 0.0
    verdict = lab.check(injection)
    assert verdict.problems == ("Deployment/fraud-detection was deleted (no harm allowed)",)


def test_a_fix_that_deletes_the_broken_workload_is_not_a_mitigation(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP, kubectl=False)
    injection = fault("image-not-found").inject(lab.world)  # ad: an optional dependency
    lab.advance(10)
    assert any("Deployment/ad: rollout not converged" in p for p in lab.check(injection).problems)
    lab.world.api.delete("Deployment", SHOP, "ad")
    lab.advance(40)
    verdict = lab.check(injection)
    assert verdict.problems[0] == "Deployment/ad was deleted (no harm allowed)"
    assert not any("rollout" in p for p in verdict.problems)
