"""Similar-incident search over closed incidents in real SQLite storage."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.similar import Bm25Index, SimilarIncidents, words
from storage import Store
from storage.records import StoredDiagnosis, StoredIncident
from tests.agents.detection.fakes import at, migrated_store

PAST = [
    # id, title, root cause, category, resolution, evidence
    (
        "INC-1",
        "frontend: HTTP 5xx error ratio above SLO",
        "geo",
        "application/code_defect",
        "rolled geo back to revision 3",
        ["geo: CrashLoopBackOff, 7 restarts", "geo image changed to hotel/geo:2.0 by kubectl-set"],
    ),
    (
        "INC-2",
        "recommendation: pods OOMKilled",
        "recommendation",
        "virtualization/misconfiguration",
        "raised the memory limit of recommendation to 512Mi",
        ["recommendation: last state OOMKilled, exit 137", "memory limit 64Mi"],
    ),
    (
        "INC-3",
        "reservation: pods Pending",
        "reservation",
        "virtualization/misconfiguration",
        "removed the nodeSelector disktype=ssd",
        ["0/3 nodes are available: node(s) didn't match Pod's node affinity/selector"],
    ),
    (
        "INC-4",
        "search: p99 latency above 800 ms",
        "search",
        "virtualization/network",
        "escalated: network delay on the path to search",
        ["search p99 2400 ms, pods healthy", "tcp retransmits"],
    ),
    (
        "INC-5",
        "profile: database authentication failed",
        "mongodb-profile",
        "application/authentication",
        "escalated with a runbook: recreate the database user",
        ["mongodb-profile: authentication failed for user admin"],
    ),
]


def _close(
    store: Store,
    iid: str,
    title: str,
    cause: str,
    category: str,
    resolution: str,
    evidence: list[str],
    seconds: float,
) -> None:
    store.incidents.create(
        StoredIncident(
            id=iid,
            title=title,
            cluster="lab",
            namespace="hotel",
            state="detected",
            mu0=3.0,
            opened_at=at(seconds),
            updated_at=at(seconds),
            group_key="lab/hotel",
        )
    )
    store.diagnoses.add(
        StoredDiagnosis(
            incident_id=iid,
            created_at=at(seconds + 1),
            reasoner="offline",
            root_cause_service=cause,
            category=category,
            confidence=0.8,
            summary=f"{cause} is the root cause",
            body={"evidence": [{"kind": "pod_state", "summary": line} for line in evidence]},
        )
    )
    store.incidents.close(
        iid,
        at=at(seconds + 60),
        message="closed",
        summary=title,
        root_cause_service=cause,
        category=category,
        resolution=resolution,
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = migrated_store(tmp_path)
    for n, past in enumerate(PAST):
        _close(s, *past, seconds=n * 1000)
    try:
        yield s
    finally:
        s.close()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("HighErrorRate: frontend returns HTTP 500; geo container crash-looping", "INC-1"),
        ("ContainerOOMKilled recommendation-5d9c7f-x2kq9 was OOMKilled (4 restarts)", "INC-2"),
        ("PodUnschedulable: reservation pod cannot be scheduled, node selector", "INC-3"),
        ("ServiceHighLatency: search p99 latency 2500 ms over 5 min", "INC-4"),
        ("profile 503s, logs: authentication failed for user admin on mongodb", "INC-5"),
    ],
)
def test_the_matching_incident_comes_first(store: Store, query: str, expected: str) -> None:
    hits = SimilarIncidents(store).search(query)
    assert hits, query
    assert hits[0].incident_id == expected
    assert all(0.0 < h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_hits_carry_what_the_incident_turned_out_to_be(store: Store) -> None:
    (best, *_) = SimilarIncidents(store).search("geo CrashLoopBackOff after an image change")
    assert (best.incident_id, best.root_cause_service, best.category) == (
        "INC-1",
        "geo",
        "application/code_defect",
    )
    assert best.resolution == "rolled geo back to revision 3"
    assert best.closed_at == at(60)
    assert best.title == "frontend: HTTP 5xx error ratio above SLO"


def test_an_unrelated_query_finds_nothing(store: Store) -> None:
    assert SimilarIncidents(store).search("kafka broker disk full on zookeeper quorum") == []
    assert SimilarIncidents(store).search("") == []


def test_exclude_and_limit(store: Store) -> None:
    search = SimilarIncidents(store, min_score=0.0)
    query = "misconfiguration of pods"
    assert len(search.search(query, limit=2)) == 2
    ids = [h.incident_id for h in search.search(query, limit=5)]
    assert "INC-2" in ids
    assert "INC-2" not in [h.incident_id for h in search.search(query, exclude="INC-2")]
    left = search.search(query, exclude=["INC-2", "INC-3"], limit=5)
    assert {"INC-2", "INC-3"}.isdisjoint(h.incident_id for h in left)


def test_incidents_closed_later_are_found_and_open_ones_never(store: Store) -> None:
    search = SimilarIncidents(store)
    assert search.refresh() == 5
    store.incidents.create(
        StoredIncident(
            id="INC-open",
            title="cart: redis connection refused",
            cluster="lab",
            namespace="shop",
            state="diagnosing",
            mu0=1.0,
            opened_at=at(9000),
            updated_at=at(9000),
            group_key="lab/shop",
        )
    )
    assert search.search("cart redis connection refused") == []
    _close(
        store,
        "INC-6",
        "cart: redis connection refused",
        "redis-cart",
        "virtualization/misconfiguration",
        "fixed the Service targetPort",
        ["cart logs: dial tcp 10.0.0.7:6379: connect: connection refused"],
        9500,
    )
    (hit, *_) = search.search("cart redis connection refused")
    assert hit.incident_id == "INC-6"
    assert search.refresh() == 6


def test_tokens_survive_the_shapes_incident_text_has() -> None:
    assert {"oom", "kill", "oomkill"} <= set(words("OOMKilled"))
    assert {"500", "5xx"} <= set(words("HTTP 500"))
    assert "5xx" in words("5XX errors")
    assert {"crash", "loop"} <= set(words("CrashLoopBackOff")) & set(words("crash-looping"))
    assert words("geo-7d9c6b5f4-x2kq9") == ["geo"]
    assert words("the pod is in a bad state") == ["pod", "bad", "state"]


def test_scores_are_normalised() -> None:
    index = Bm25Index()
    text = "frontend 5xx error ratio above SLO after geo image change"
    index.add("same", text)
    index.add("other", "search latency")
    index.add("third", "reservation unschedulable")
    ((key, score),) = index.search(text, limit=1)
    assert key == "same" and 0.8 <= score <= 1.0
    assert index.search("nothing shared at all") == []
