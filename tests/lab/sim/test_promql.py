"""The lab's PromQL subset over a hand-made history: exact numbers, and clear refusals."""

from __future__ import annotations

import math

import pytest

from agents.errors import QueryError
from lab.sim.metrics import MetricStore, labels
from lab.sim.promql import Evaluator, Vector


@pytest.fixture
def store() -> MetricStore:
    s = MetricStore(scrape_interval_s=10, retention_s=3600)
    for i in range(13):  # two minutes, one scrape every 10 s
        t = 1000.0 + 10 * i
        s.inc(
            "http_server_requests_total",
            labels(namespace="a", service="x", code="200"),
            90.0 if i else 0.0,
        )
        s.inc(
            "http_server_requests_total",
            labels(namespace="a", service="x", code="500"),
            10.0 if i else 0.0,
        )
        s.inc(
            "http_server_requests_total",
            labels(namespace="a", service="y", code="200"),
            50.0 if i else 0.0,
        )
        s.observe("lat_seconds", labels(namespace="a", service="x"), [(100.0, 20.0)] if i else [])
        s.set_group(
            "g",
            {
                ("up", labels(namespace="a", pod="p1")): 1.0,
                ("up", labels(namespace="a", pod="p2")): 0.0,
            },
        )
        s.scrape(t)
    return s


def _eval(store: MetricStore, q: str) -> dict[tuple[tuple[str, str], ...], float]:
    value = Evaluator(store).evaluate(q, 1120.0)
    assert isinstance(value, Vector)
    return {
        tuple(sorted((k, v) for k, v in lb.items() if k != "__name__")): x
        for lb, x in value.samples
    }


def test_rate_sum_by_and_division(store: MetricStore) -> None:
    assert _eval(
        store, 'sum by (service) (rate(http_server_requests_total{namespace="a"}[1m]))'
    ) == {
        (("service", "x"),): pytest.approx(10.0),
        (("service", "y"),): pytest.approx(5.0),
    }
    ratio = _eval(
        store,
        'sum by (service) (rate(http_server_requests_total{code=~"5.."}[1m])) / '
        "sum by (service) (rate(http_server_requests_total[1m]))",
    )
    assert ratio == {(("service", "x"),): pytest.approx(0.1)}
    assert _eval(store, 'increase(http_server_requests_total{service="y"}[1m])') == {
        (("code", "200"), ("namespace", "a"), ("service", "y")): pytest.approx(300.0)
    }


def test_selectors_comparisons_and_aggregations(store: MetricStore) -> None:
    assert _eval(store, 'up{pod!="p2"}') == {(("namespace", "a"), ("pod", "p1")): 1.0}
    assert _eval(store, "up == 0") == {(("namespace", "a"), ("pod", "p2")): 0.0}
    assert _eval(store, "count(up)") == {(): 2.0}
    assert _eval(store, "max without (pod) (up)") == {(("namespace", "a"),): 1.0}
    assert _eval(store, 'sum(up{pod!~"p1"}) + 3') == {(): 3.0}
    assert Evaluator(store).evaluate("2 * (3 + 1)", 1120.0) == 8.0


def test_histogram_quantile_interpolates_buckets(store: MetricStore) -> None:
    q = _eval(store, "histogram_quantile(0.5, sum by (le) (rate(lat_seconds_bucket[1m])))")
    assert 0.01 < q[()] < 0.05  # 20 ms median, within the 10–25 ms bucket's interpolation
    assert _eval(store, "histogram_quantile(0.99, rate(lat_seconds_bucket[1m]))")


def test_stale_series_drop_out(store: MetricStore) -> None:
    store.set_group("g", {("up", labels(namespace="a", pod="p1")): 1.0})
    store.scrape(1130.0)
    value = Evaluator(store).evaluate("up", 1130.0)
    assert isinstance(value, Vector)
    assert [lb["pod"] for lb, _ in value.samples] == ["p1"]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("absent(up)", "not supported"),
        ("rate(up)", "range vector"),
        ("up[5m]", "range vector cannot be the result"),
        ('up{pod="p1"', "expected"),
        ("up{pod=p1}", "quoted string"),
        ("sum by (pod (up)", "expected"),
        ("", "empty"),
        ("up @", "unexpected character"),
    ],
)
def test_unsupported_queries_raise_query_error_quoting_the_query(
    store: MetricStore, query: str, reason: str
) -> None:
    with pytest.raises(QueryError) as info:
        Evaluator(store).evaluate(query, 1120.0)
    assert reason in str(info.value)
    assert repr(query) in str(info.value)


def test_division_by_zero_follows_prometheus() -> None:
    s = MetricStore(scrape_interval_s=1)
    s.set_group("g", {("a", labels(x="1")): 0.0})
    s.scrape(1.0)
    value = Evaluator(s).evaluate("a / 0", 1.0)
    assert isinstance(value, Vector)
    assert math.isnan(value.samples[0][1])


def test_a_reused_evaluator_sees_series_that_enter_and_leave_the_history() -> None:
    """The evaluator remembers which series a selector matched; a series that appears later
    (a new pod) or is trimmed out of the retention must still be seen, and stale points
    (absent at a scrape) are never samples."""
    s = MetricStore(scrape_interval_s=10, retention_s=30)
    evaluator = Evaluator(s)
    first, second = labels(namespace="a", pod="p1"), labels(namespace="a", pod="p2")
    s.set_group("g", {("up", first): 1.0})
    s.scrape(1000.0)
    assert [lb["pod"] for lb, _ in _vector(evaluator, 'up{namespace="a"}', 1000.0)] == ["p1"]
    s.set_group("g", {("up", first): 1.0, ("up", second): 1.0})
    s.scrape(1010.0)
    assert sorted(lb["pod"] for lb, _ in _vector(evaluator, 'up{namespace="a"}', 1010.0)) == [
        "p1",
        "p2",
    ]
    s.set_group("g", {("up", second): 1.0})  # p1 goes: stale from the next scrape
    s.scrape(1020.0)
    assert s.samples(("up", first), 1000.0, 1020.0) == [(1000.0, 1.0), (1010.0, 1.0)]
    for i in range(3, 80):  # the history is trimmed to its retention in batches
        s.scrape(1000.0 + 10 * i)
    assert s.samples(("up", first), 0.0, 2000.0) == []
    assert s.keys("up") == [("up", second)]
    assert [lb["pod"] for lb, _ in _vector(evaluator, 'up{namespace="a"}', 1790.0)] == ["p2"]
    points = s.samples(("up", second), 1770.0, 1790.0)
    assert points == [(1770.0, 1.0), (1780.0, 1.0), (1790.0, 1.0)]


def _vector(evaluator: Evaluator, query: str, at: float) -> list[tuple[dict[str, str], float]]:
    value = evaluator.evaluate(query, at)
    assert isinstance(value, Vector)
    return list(value.samples)
