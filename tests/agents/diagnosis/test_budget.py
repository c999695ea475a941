"""Every bundle the diagnoser can produce stays within the evidence budget, including
pathological inputs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agents.diagnosis import Diagnoser
from agents.diagnosis.budget import bundle_tokens, estimate_tokens, fit, render
from agents.diagnosis.items import make_item
from agents.model import EvidenceKind
from agents.redact import redact_text as basic_redact
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import (
    FakeCluster,
    FakeJournal,
    FakeMetrics,
    FixedClock,
    World,
    alert,
    hotel,
    incident,
    shop,
)


def test_estimator_is_about_four_characters_per_token() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("x" * 4000) == 1000


def item(key: str, relevance: float, detail_chars: int, service: str | None = None):  # type: ignore[no-untyped-def]
    return make_item(
        key=key,
        kind=EvidenceKind.LOG,
        source=f"logs/{key}",
        summary=f"summary of {key}",
        redactor=basic_redact,
        service=service,
        detail="y" * detail_chars,
        relevance=relevance,
    )


def test_fit_ranks_cited_and_focused_first_and_truncates_the_one_that_does_not_fit() -> None:
    items = [
        item("low", 0.1, 100),
        item("high", 0.9, 100),
        item("cited", 0.2, 100),
        item("focus", 0.5, 100, "geo"),
    ]
    kept, used = fit(items, 10_000, cited=["cited"], focus=["geo"])
    assert [i.key for i in kept] == ["high", "cited", "focus", "low"]
    assert used == bundle_tokens([i.evidence for i in kept])
    big = [item("a", 0.9, 2000), item("b", 0.8, 2000)]
    kept, used = fit(big, 700)
    assert [i.key for i in kept] == ["a", "b"]
    assert len(kept[1].evidence.detail) < 2000 and used <= 700


def test_fit_drops_what_cannot_fit_even_without_detail() -> None:
    items = [item(f"k{i}", 0.5, 50) for i in range(500)]
    kept, used = fit(items, 600)
    assert 0 < len(kept) < 500 and used <= 600
    assert used == bundle_tokens([i.evidence for i in kept])


@pytest.mark.parametrize("budget", [500, 1500, 4000, 24_000])
def test_pathological_namespace_stays_within_budget(budget: int) -> None:
    w = shop()
    faults.oom(w, "cart")
    huge = "E" * 200_000
    for name in list(w.apps):
        w.log(
            name,
            *(f"failure {i} calling cart: connection refused {huge[:5000]}" for i in range(300)),
        )
        w.sick(name, errors=0.5, p99=2000)
    w.raw_log("cart", huge, huge, previous=True)
    for i in range(3000):
        w.event("Pod", f"cart-7d9f8-{i % 40}", f"Reason{i % 97}", f"message {i} " + "z" * 400)
    for i in range(400):
        w.change(
            "Deployment",
            "cart",
            {f"spec.template.spec.containers[0].env[{i}].value": ("a" * 900, "b" * 900)},
            minutes_before=i / 10,
        )
    diagnoser = Diagnoser(
        cluster=FakeCluster(w),
        metrics=FakeMetrics(w),
        journal=FakeJournal(w),
        clock=FixedClock(),
        evidence_token_budget=budget,
    )
    d = diagnoser.diagnose(incident(w, "cart"), [alert(w, "KubePodCrashLooping", "cart")])
    assert 0 < d.evidence_tokens <= budget
    assert d.evidence_tokens == bundle_tokens(d.evidence)
    assert d.top.service == "cart"
    for h in d.hypotheses:
        assert all(0 <= i < len(d.evidence) for i in h.evidence)


def _apply(w: World, fault: int) -> None:
    first, second = sorted(w.apps)[:2]
    if fault == 0:
        faults.bad_build(w, first, second)
    elif fault == 1:
        faults.oom(w, first)
    elif fault == 2:
        faults.scale_down(w, first, second)
    else:
        faults.network_delay(w, first, second)


@pytest.mark.parametrize("make", [hotel, shop])
@pytest.mark.parametrize("budget", [500, 24_000])
@pytest.mark.parametrize("fault", range(4))
def test_every_scenario_bundle_is_within_budget(make: object, budget: int, fault: int) -> None:
    w: World = make()  # type: ignore[operator]
    _apply(w, fault)
    d = Diagnoser(
        cluster=FakeCluster(w),
        metrics=FakeMetrics(w),
        journal=FakeJournal(w),
        clock=FixedClock(),
        evidence_token_budget=budget,
    ).diagnose(incident(w, None), [alert(w, "X", None)])
    assert 0 < d.evidence_tokens <= budget
    assert d.evidence_tokens == bundle_tokens(d.evidence)


def test_log_reads_are_bounded_by_the_handler() -> None:
    w = hotel()
    for name in w.apps:
        w.sick(name, errors=0.9)
        w.set_pod(name, restart_count=2, last_terminated_reason="Error")
        w.raw_log(name, "panic: boom", previous=True)
    cluster = FakeCluster(w)
    Diagnoser(
        cluster=cluster, metrics=FakeMetrics(w), journal=FakeJournal(w), clock=FixedClock()
    ).diagnose(incident(w, "frontend"), [alert(w, "HighErrorRate", "frontend")])
    pods = {pod for pod, _, _ in cluster.log_reads}
    assert len(pods) <= 10  # service-errors handler: max_pods 10
    assert all(tail <= 60 for _, _, tail in cluster.log_reads)
    assert cluster.log_reads[0][0].startswith("frontend"), "the alerting service is read first"


def test_render_shows_index_kind_source_and_detail() -> None:
    ev = replace(item("k", 0.5, 3).evidence, service="geo")
    assert render(4, ev) == "[4] log logs/k (service geo): summary of k\nyyy"
