from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from agents.diagnosis import Diagnoser
from agents.diagnosis.collect import Collector
from agents.diagnosis.handlers import load_handlers
from agents.diagnosis.tools import SUBMIT, Status, Toolbox
from agents.errors import ClusterError
from agents.model import Change, IncidentId, JsonObject, Scope, SimilarIncident
from agents.redact import redact_text as basic_redact
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import (
    T0,
    FakeCluster,
    FakeJournal,
    FakeMetrics,
    FakeSimilar,
    FixedClock,
    alert,
    hotel,
    incident,
)


class BrokenJournal:
    def changes(
        self, scope: Scope, since: datetime, until: datetime, kinds: Sequence[str] | None = None
    ) -> list[Change]:
        raise ClusterError("journal table unavailable")

    def last_known_good(
        self, scope: Scope, kind: str, name: str, before: datetime
    ) -> JsonObject | None:
        raise ClusterError("unavailable")


def test_similar_incidents_are_retrieved_with_a_redacted_text_and_returned() -> None:
    w = hotel()
    faults.target_port(w, "geo", 9999, caller="search")
    past = SimilarIncident(
        incident_id=IncidentId("inc-0"),
        title="geo refused",
        score=0.8,
        root_cause_service="geo",
        category="virtualization/misconfiguration",
        resolution="restored targetPort",
        closed_at=T0,
    )
    similar = FakeSimilar([past])
    d = Diagnoser(
        cluster=FakeCluster(w),
        metrics=FakeMetrics(w),
        journal=FakeJournal(w),
        similar=similar,
        clock=FixedClock(),
    ).diagnose(
        incident(w, "search", "search errors password=x1y2z3"),
        [alert(w, "HighErrorRate", "search")],
    )
    assert d.similar == (past,)
    assert (
        similar.texts and "search errors" in similar.texts[0] and "x1y2z3" not in similar.texts[0]
    )
    assert d.created_at == FixedClock().now()


def test_a_failing_journal_is_a_gap_not_an_exception() -> None:
    w = hotel()
    faults.oom(w, "geo")
    d = Diagnoser(
        cluster=FakeCluster(w), metrics=FakeMetrics(w), journal=BrokenJournal(), clock=FixedClock()
    ).diagnose(incident(w, "geo"), [alert(w, "KubePodCrashLooping", "geo")])
    assert (d.top.service, str(d.top.category)) == ("geo", "virtualization/misconfiguration")
    gaps = [e for e in d.evidence if e.source == "diagnosis"]
    assert gaps and "change journal" in gaps[0].detail


def test_the_collector_follows_blame_down_the_chain_before_the_namespace() -> None:
    w = hotel()
    w.show_call_graph = False
    faults.target_port(w, "geo", 9999, caller="search", top="frontend")
    faults.oom(w, "profile")  # an unrelated anomaly elsewhere in the namespace
    cluster = FakeCluster(w)
    handler = load_handlers().select([alert(w, "HighErrorRate", "frontend")])
    collector = Collector(
        cluster=cluster,
        metrics=FakeMetrics(w),
        journal=FakeJournal(w),
        redactor=basic_redact,
        clock=FixedClock(),
    )
    obs, _ = collector.collect(
        incident(w, "frontend"), [alert(w, "HighErrorRate", "frontend")], handler
    )
    order = [pod.rsplit("-", 2)[0] for pod, _, _ in cluster.log_reads]
    assert order[:3] == ["frontend", "search", "geo"]
    assert ("search", "geo") in obs.edges and obs.edge_sources[("search", "geo")] == "logs"
    assert ("geo", "mongodb-geo") in obs.edges and obs.edge_sources[
        ("geo", "mongodb-geo")
    ] == "config"


def test_toolbox_results_carry_an_explicit_status() -> None:
    w = hotel()
    faults.scale_down(w, "mongodb-rate", "rate")
    cluster, metrics = FakeCluster(w), FakeMetrics(w)
    handler = load_handlers().default
    collector = Collector(
        cluster=cluster,
        metrics=metrics,
        journal=FakeJournal(w),
        redactor=basic_redact,
        clock=FixedClock(),
    )
    obs, _ = collector.collect(incident(w, "rate"), [alert(w, "X", "rate")], handler)
    box = Toolbox(
        cluster=cluster, metrics=metrics, journal=FakeJournal(w), redactor=basic_redact, obs=obs
    )
    calls: dict[str, JsonObject] = {
        "list_pods": {"only_unhealthy": True},
        "get_events": {"warnings_only": False},
        "list_services": {},
        "get_config_maps": {"name": "hotel-config"},
        "list_nodes": {},
        "list_quotas": {},
        "rollout_history": {"deployment": "geo"},
        "recent_changes": {"since_minutes": 30},
        "golden_signals": {"services": ["rate"]},
    }
    for name, args in calls.items():
        outcome = box.call(name, args)
        assert outcome.status in (Status.SUCCESS, Status.NO_DATA), (name, outcome)
        assert json.loads(outcome.render(basic_redact))["status"] == str(outcome.status)
    assert box.call("list_pods", {"service": "nope"}).status is Status.NO_DATA
    missing = box.call("rollout_history", {"deployment": "nope"})
    assert missing.status is Status.ERROR and "nope" in (missing.error or "")
    assert box.call("teleport", {}).status is Status.ERROR
    assert box.call("get_logs", {"pod": "ghost-0"}).status is Status.ERROR
    assert (
        box.call("promql_query", {"query": "sum(up"}).error
        == "query 'sum(up' failed: bad_data: 1:10: parse error: unclosed left parenthesis"
    )
    assert SUBMIT in {t.name for t in box.specs()}
    bare = Toolbox(cluster=cluster, metrics=None, journal=None, redactor=basic_redact, obs=obs)
    for name in ("recent_changes", "golden_signals", "promql_query"):
        args = {"query": "up"} if name == "promql_query" else {}
        assert bare.call(name, args).status is Status.NO_DATA


class _Refusing:
    """A reader whose pod list fails with `error`; every other read answers."""

    def __init__(self, inner: FakeCluster, error: Exception) -> None:
        self._inner = inner
        self._error = error

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def pods(self, namespace: str, *, label_selector: str = "") -> object:
        raise self._error


def test_a_diagnosis_that_cannot_see_the_pods_is_not_made() -> None:
    """The API not answering (timeout, refused connection) is not a finding: no diagnosis,
    `SourcesUnavailable` instead, so the machine waits. RBAC refusing one read is a gap:
    the diagnosis goes on with what it could read."""
    import pytest

    from agents.errors import Forbidden, SourcesUnavailable, TransientError

    w = hotel()
    faults.oom(w, "geo")

    def diagnose(error: Exception) -> object:
        return Diagnoser(
            cluster=_Refusing(FakeCluster(w), error),  # type: ignore[arg-type]
            metrics=FakeMetrics(w),
            journal=FakeJournal(w),
            clock=FixedClock(),
        ).diagnose(incident(w, "geo"), [alert(w, "KubePodCrashLooping", "geo")])

    with pytest.raises(SourcesUnavailable, match="pods: no answer"):
        diagnose(TransientError("no answer within the deadline"))
    d = diagnose(Forbidden("pods is forbidden"))
    gaps = [e for e in d.evidence if e.source == "diagnosis"]  # type: ignore[attr-defined]
    assert gaps and "pods is forbidden" in gaps[0].detail


class _MetricsFailing:
    def __init__(self, inner: FakeMetrics, error: Exception) -> None:
        self._inner = inner
        self._error = error

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def golden_signals(self, *args: object, **kwargs: object) -> object:
        raise self._error


def test_prometheus_unreachable_is_not_a_finding_but_a_profile_that_fits_nothing_is_a_gap() -> None:
    """Prometheus giving no answer: no diagnosis (the machine waits). Prometheus answering
    that the signal profile fits nothing: a gap, and the diagnosis goes on without signals
    (the loop must still reach a plan or an escalation: waiting would never end)."""
    import pytest

    from agents.errors import MetricsError, MetricsUnavailable, SourcesUnavailable

    w = hotel()
    faults.oom(w, "geo")

    def diagnose(error: Exception) -> object:
        return Diagnoser(
            cluster=FakeCluster(w),
            metrics=_MetricsFailing(FakeMetrics(w), error),  # type: ignore[arg-type]
            journal=FakeJournal(w),
            clock=FixedClock(),
        ).diagnose(incident(w, "geo"), [alert(w, "KubePodCrashLooping", "geo")])

    with pytest.raises(SourcesUnavailable, match="golden signals"):
        diagnose(MetricsUnavailable("Prometheus gave no answer within the deadline"))
    d = diagnose(MetricsError("signal profile lab: Prometheus has no http_requests_total"))
    assert d.top.service == "geo"  # type: ignore[attr-defined]
