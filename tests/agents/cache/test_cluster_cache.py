"""`ClusterCache` against the lab's API server over HTTP, through the official client.

The server counts what it answers (`lab.kube.server.counting`): once a namespace's stores are
synced, reads cost no list request; a write reaches the cache through the watch; a store whose
watches the server refuses (410 Gone) answers live and re-lists after growing pauses.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.cache.cluster_cache import (
    CACHED_KINDS,
    CacheSettings,
    ClusterCache,
    _lean,
    _selector,
    _Store,
)
from agents.journal import ChangeJournal, JournalWatcher
from agents.kubeparse import parse_event
from agents.model import KubeObject
from lab.clock import LabClock
from lab.kube.cluster import LabCluster
from lab.kube.server.counting import CountingServer
from lab.kube.server.thread import ServerThread
from storage import StorageError
from tests.agents.detection.fakes import migrated_store

NS = "shop"
LABELS = {"app": "cart", "tier": "web"}


def _app(replicas: int) -> list[dict[str, Any]]:
    container = {"name": "cart", "image": "lab/app:1.0", "ports": [{"containerPort": 8080}]}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "cart", "namespace": NS, "labels": LABELS},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "cart"}},
                "template": {"metadata": {"labels": LABELS}, "spec": {"containers": [container]}},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "cart", "namespace": NS},
            "spec": {"selector": {"app": "cart"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cart-config", "namespace": NS},
            "data": {"MODE": "fast"},
        },
    ]


@dataclass
class Lab:
    cluster: LabCluster
    server: CountingServer
    kube: KubernetesCluster


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    cluster = LabCluster(clock=LabClock(speed=1.0), seed=11)
    cluster.apply_manifests(_app(3), field_manager="helm")
    cluster.start()
    server = CountingServer(cluster)
    thread = ServerThread(server)
    url = thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "lab", "cluster": {"server": url}}],
                "users": [{"name": "admin", "user": {"token": "lab-token"}}],
                "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "admin"}}],
                "current-context": "lab",
            }
        )
    )
    kube = KubernetesCluster.connect(kubeconfig=kubeconfig, cluster_name="lab")
    try:
        yield Lab(cluster=cluster, server=server, kube=kube)
    finally:
        server.close_watches()
        kube.close()
        thread.stop()
        cluster.stop()


def until(condition: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _lists(server: CountingServer, since: float) -> list[str]:
    """Non-watch reads of collections (object GETs end in a name; collections do not)."""
    return [
        s.path
        for s in server.since(since)
        if s.method == "GET"
        and not s.watch
        and s.path.rstrip("/").rsplit("/", 1)[-1]
        in {
            "pods",
            "events",
            "deployments",
            "statefulsets",
            "replicasets",
            "services",
            "endpoints",
            "configmaps",
        }
    ]


def _without_managed_fields(body: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in body["metadata"].items() if k != "managedFields"}
    return {**body, "metadata": meta}


def _close(cache: ClusterCache, lab: Lab) -> None:
    cache.close(timeout_s=0)
    lab.server.close_watches()


def test_synced_reads_agree_with_the_server_and_list_nothing(lab: Lab) -> None:
    until(lambda: len([p for p in lab.kube.pods(NS) if p.ready]) == 3, "the app's pods ready")
    cache = ClusterCache(lab.kube)
    try:
        assert cache.wait_synced(NS, timeout_s=20)
        mark = time.monotonic()
        live = lab.kube
        assert cache.pods(NS) == live.pods(NS)
        assert cache.pods(NS, label_selector="app=cart,tier!=db") == live.pods(
            NS, label_selector="app=cart,tier!=db"
        )
        assert cache.workloads(NS) == live.workloads(NS)
        assert cache.services(NS) == live.services(NS)
        assert cache.config_maps(NS) == live.config_maps(NS)
        assert cache.events(NS, limit=20) == live.events(NS, limit=20)
        # ReplicaSets are stored lean: everything but managedFields, which no cached read uses.
        assert [
            o.body
            for o in cache.list_objects(
                api_version="apps/v1", kind="ReplicaSet", namespace=NS, label_selector="app=cart"
            )
        ] == [
            _without_managed_fields(o.body)
            for o in live.list_objects(
                api_version="apps/v1", kind="ReplicaSet", namespace=NS, label_selector="app=cart"
            )
        ]
        assert cache.rollout_history(NS, "cart") == live.rollout_history(NS, "cart")
        # The comparisons' live halves listed; the cache's halves did not.
        cached_only = time.monotonic()
        cache.pods(NS)
        cache.events(NS)
        cache.workloads(NS)
        cache.services(NS)
        assert _lists(lab.server, cached_only) == []
        assert len(_lists(lab.server, mark)) >= 8  # the live side really went to the server
    finally:
        _close(cache, lab)


def test_a_write_reaches_the_cache_through_the_watch(lab: Lab) -> None:
    cache = ClusterCache(lab.kube)
    try:
        assert cache.wait_synced(NS, timeout_s=20)
        mark = time.monotonic()
        lab.cluster.api.patch(
            "Deployment",
            NS,
            "cart",
            {"spec": {"replicas": 5}},
            patch_type="merge",
            field_manager="test",
        )
        until(
            lambda: (
                [w.replicas for w in cache.workloads(NS)] == [5]
                and len(cache.pods(NS, label_selector="app=cart")) == 5
            ),
            "the scale-up seen by the cache",
        )
        lab.cluster.api.delete("ConfigMap", NS, "cart-config")
        until(
            lambda: "cart-config" not in {c.name for c in cache.config_maps(NS)},
            "the deletion seen by the cache",
        )
        assert _lists(lab.server, mark) == []  # through the watches, not by listing
    finally:
        _close(cache, lab)


def test_refused_watches_read_live_and_relist_after_growing_pauses(lab: Lab) -> None:
    lab.server.expire_watches = True
    cache = ClusterCache(
        lab.kube, settings=CacheSettings(timeout_s=60, backoff_s=0.1, max_backoff_s=0.8)
    )
    try:
        cache.start([NS])
        start = time.monotonic()
        until(lambda: time.monotonic() - start > 3.0, "three seconds of refusals")
        lists = [s.at for s in lab.server.requests("/configmaps", watch=False)]
        # One list per refusal after a growing pause, not hundreds: about log2(0.8/0.1) + 3 s
        # / 0.4 s at most (jitter takes up to half off the 0.8 s ceiling).
        assert 3 <= len(lists) <= 15, len(lists)
        # The n-th pause is at least half of min(0.1 * 2**n, 0.8): lower bounds only, which a
        # slow machine cannot break.
        gaps = [b - a for a, b in itertools.pairwise(lists)]
        for n, gap in enumerate(gaps):
            assert gap >= 0.5 * min(0.1 * 2**n, 0.8), gaps
        # Every watch is refused, so a store is synced only between a list and its refusal;
        # reads in between go to the server, and are right either way.
        assert "cart-config" in {c.name for c in cache.config_maps(NS)}
        assert [w.name for w in cache.workloads(NS)] == ["cart"]
    finally:
        _close(cache, lab)


def test_one_store_per_kind_and_namespace() -> None:
    assert set(CACHED_KINDS) >= {"Pod", "Event", "Deployment", "Service", "ConfigMap"}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("app=cart", {"app": "cart"}, True),
        ("app==cart,tier=web", {"app": "cart"}, False),
        ("app!=cart", {"app": "geo"}, True),
        ("app!=cart", {}, True),
        ("app", {"app": ""}, True),
        ("!app", {"app": "x"}, False),
        ("", {"any": "thing"}, True),
    ],
)
def test_equality_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    predicate = _selector(selector)
    assert predicate is not None
    assert predicate(labels) is expected


def test_set_based_selectors_go_to_the_server() -> None:
    assert _selector("app in (cart,geo)") is None
    assert _selector("tier notin (db)") is None


def test_the_journal_follows_the_caches_watches_instead_of_opening_its_own(
    lab: Lab, tmp_path: Path
) -> None:
    store = migrated_store(tmp_path)
    cache = ClusterCache(lab.kube, sink_errors=(StorageError,))
    journal = ChangeJournal(store=store, clock=lab.cluster.clock, cluster="lab", namespaces=[NS])
    watcher = JournalWatcher(journal=journal, watcher=lab.kube, timeout_s=30, cache=cache)
    try:
        watcher.start()
        assert cache.wait_synced(NS, timeout_s=20)
        mark = time.monotonic()
        lab.cluster.api.patch(
            "ConfigMap",
            NS,
            "cart-config",
            {"data": {"MODE": "slow"}},
            patch_type="merge",
            field_manager="kubectl-edit",
        )

        def recorded() -> bool:
            rows = store.journal.query("lab", NS)
            return any(r.name == "cart-config" and r.manager == "kubectl-edit" for r in rows)

        until(recorded, "the edit recorded by the journal")
        # One list and one watch per kind: the journal opened none of its own.
        for path in ("/deployments", "/statefulsets", "/services", "/configmaps"):
            assert len(lab.server.requests(path, watch=True)) == 1, path
            assert len(lab.server.requests(path, watch=False)) == 1, path
        assert _lists(lab.server, mark) == []
    finally:
        watcher.stop(timeout_s=1)
        _close(cache, lab)
        store.close()


def test_a_cached_event_keeps_what_is_read_of_it_and_nothing_else() -> None:
    event = {
        "metadata": {
            "name": "geo-7d9.17a",
            "namespace": "hotel",
            "uid": "u-1",
            "resourceVersion": "42",
            "creationTimestamp": "2026-12-03T10:00:00Z",
            "managedFields": [{"manager": "kubelet"}],
        },
        "involvedObject": {"kind": "Pod", "name": "geo-7d9", "uid": "u-2", "fieldPath": "x"},
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
        "type": "Warning",
        "count": 7,
        "lastTimestamp": "2026-12-03T10:05:00Z",
        "firstTimestamp": "2026-12-03T10:00:00Z",
        "source": {"component": "kubelet", "host": "node-1"},
        "reportingComponent": "kubelet",
    }
    kept = _lean(KubeObject(event), "Event")
    assert parse_event(kept.body) == parse_event(event)
    assert kept.name == "geo-7d9.17a"
    assert kept.body == {
        "metadata": {
            "name": "geo-7d9.17a",
            "namespace": "hotel",
            "resourceVersion": "42",
            "creationTimestamp": "2026-12-03T10:00:00Z",
        },
        "involvedObject": {"kind": "Pod", "name": "geo-7d9"},
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
        "type": "Warning",
        "count": 7,
        "lastTimestamp": "2026-12-03T10:05:00Z",
    }
    pod = {"metadata": {"name": "geo-7d9", "managedFields": [{}]}, "spec": {"nodeName": "n"}}
    assert _lean(KubeObject(pod), "Pod").body == {
        "metadata": {"name": "geo-7d9"},
        "spec": {"nodeName": "n"},
    }


def _pod(name: str, app: str) -> KubeObject:
    return KubeObject(
        {
            "metadata": {
                "name": name,
                "namespace": NS,
                "labels": {"app": app},
                "managedFields": [{"manager": "kubelet"}],
            },
            "spec": {"containers": [{"name": "app", "image": "lab/app:1.0", "env": []}]},
            "status": {"phase": "Running", "message": "ünïcode stays ünïcode"},
        }
    )


def test_a_store_hands_out_its_own_copies_and_parses_only_what_a_selector_keeps() -> None:
    # The store keeps packed JSON, not the watch's objects: neither what the watch gave it nor
    # what a reader does with what it got changes what the next reader sees.
    store = _Store(lean="Pod")
    given = [_pod("cart-1", "cart"), _pod("geo-1", "geo"), _pod("cart-2", "cart")]
    store.replace(given, "7")
    given[0].body["spec"]["containers"][0]["image"] = "changed/by:the-watch"

    first = store.items()
    assert first is not None
    assert [o.name for o in first] == ["cart-1", "cart-2", "geo-1"]  # name order
    assert first[0].body["spec"]["containers"][0]["image"] == "lab/app:1.0"
    assert "managedFields" not in first[0].metadata  # stored lean
    assert first[0].body["status"]["message"] == "ünïcode stays ünïcode"
    first[0].body["spec"]["containers"][0]["env"].append({"name": "X", "value": "1"})

    again = store.items()
    assert again is not None and again[0].body["spec"]["containers"][0]["env"] == []
    assert again[0] is not first[0]

    selected = store.items(lambda labels: labels.get("app") == "geo")
    assert selected is not None and [o.name for o in selected] == ["geo-1"]

    odd = _pod("odd-1", "odd")
    odd.body["status"]["message"] = json.loads('"half a pair: \\ud800"')  # a lone surrogate
    store.apply("ADDED", odd)
    kept = store.items(lambda labels: labels.get("app") == "odd")
    assert kept is not None and kept[0].body == _lean(odd, "Pod").body

    store.apply("MODIFIED", _pod("geo-1", "cart"))
    store.apply("DELETED", _pod("cart-1", "cart"))
    moved = store.items(lambda labels: labels.get("app") == "cart")
    assert moved is not None and [o.name for o in moved] == ["cart-2", "geo-1"]
