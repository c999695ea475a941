"""How many requests the journal's watch threads send the API server (issue 21).

The lab's emulated API server, over HTTP through the official client, behind a server that
counts every request it answers (and, when told, refuses every watch as a real server does when
its watch history is too short). The counts are what a cluster operator would see in the API
server's audit log: a handful per watched kind and namespace, not hundreds a second.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.journal import CONFIG_MAP, WATCHED_KINDS, ChangeJournal, JournalWatcher
from lab.clock import LabClock
from lab.kube.cluster import LabCluster
from lab.kube.errors import Gone
from lab.kube.jsonutil import dumps
from lab.kube.server.app import ApiServer
from lab.kube.server.thread import ServerThread
from storage import Store

#: Objects created, then forgotten by the server's watch history (as etcd compaction does).
OLD_NAMESPACE: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "old"}},
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "old"},
        "data": {"MODE": "calm"},
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "old"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    },
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    at: float
    method: str
    path: str
    query: dict[str, str]

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")


class CountingServer(ApiServer):
    """The lab's API server with an access log; `expire_watches` answers every watch with the
    ERROR event a real server sends for a resourceVersion older than its history."""

    def __init__(self, cluster: LabCluster) -> None:
        super().__init__(api=cluster.api, logs=cluster.logs)
        self.seen: list[Seen] = []
        self.expire_watches = False
        self._lock = threading.Lock()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        seen = Seen(
            at=time.monotonic(),
            method=request.method,
            path=request.path,
            query=dict(request.query),
        )
        with self._lock:
            self.seen.append(seen)
        if seen.watch and self.expire_watches:
            rv = seen.query.get("resourceVersion", "")
            status = Gone(f"too old resource version: {rv} ({self.api.store.resource_version})")
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            await response.prepare(request)
            await response.write(dumps({"type": "ERROR", "object": status.status()}) + b"\n")
            await response.write_eof()
            return response
        return await super().handle(request)

    def requests(self, path_part: str = "", *, watch: bool | None = None) -> list[Seen]:
        with self._lock:
            return [
                s for s in self.seen if path_part in s.path and (watch is None or s.watch == watch)
            ]


@dataclass
class Lab:
    cluster: LabCluster
    server: CountingServer
    kube: KubernetesCluster


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    cluster = LabCluster(clock=LabClock(speed=1.0), seed=5)
    cluster.apply_manifests(OLD_NAMESPACE, field_manager="helm")
    cluster.store.compact()  # the server's watch history no longer reaches these objects
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
        kube.close()
        thread.stop()
        cluster.stop()


def run_for(lab: Lab, watcher: JournalWatcher, seconds: float, *, started: bool = False) -> None:
    """Run the threads for `seconds` of wall time, then stop them, ending their open watches
    as a server's timeoutSeconds would."""
    if not started:
        watcher.start()
    try:
        time.sleep(seconds)
    finally:
        watcher.signal_stop()
        deadline = time.monotonic() + 10
        while watcher.running and time.monotonic() < deadline:
            lab.server.close_watches()
            time.sleep(0.05)
        assert watcher.stop(timeout_s=1)


def per_collection(server: CountingServer) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in server.seen:
        counts[s.path] = counts.get(s.path, 0) + 1
    return counts


def test_an_empty_namespace_and_one_older_than_the_watch_history_stay_quiet(
    lab: Lab, store: Store
) -> None:
    journal = ChangeJournal(
        store=store, clock=lab.cluster.clock, cluster="lab", namespaces=["default", "old"]
    )
    watcher = JournalWatcher(journal=journal, watcher=lab.kube, timeout_s=60)
    run_for(lab, watcher, 3.0)

    counts = per_collection(lab.server)
    # Each of the 2 x len(WATCHED_KINDS) threads lists once and opens one watch still open.
    assert len(counts) == 2 * len(WATCHED_KINDS), counts
    assert all(n <= 3 for n in counts.values()), counts
    assert len(lab.server.seen) <= 2 * len(counts) + 4, counts
    # The objects older than the history were recorded as baselines all the same.
    assert {r.name for r in store.journal.query("lab", "old")} >= {"settings", "web"}


def test_a_watch_that_ends_normally_resumes_without_a_new_list(lab: Lab, store: Store) -> None:
    journal = ChangeJournal(
        store=store, clock=lab.cluster.clock, cluster="lab", namespaces=["old"], kinds=[CONFIG_MAP]
    )
    watcher = JournalWatcher(journal=journal, watcher=lab.kube, timeout_s=1)
    run_for(lab, watcher, 3.5)

    lists = lab.server.requests("/configmaps", watch=False)
    watches = lab.server.requests("/configmaps", watch=True)
    assert len(lists) == 1
    assert 2 <= len(watches) <= 5  # one per timeoutSeconds=1, not a tight loop
    listed_at = str(lab.cluster.store.resource_version)
    assert {w.query.get("resourceVersion") for w in watches} == {listed_at}
    assert all(w.query.get("allowWatchBookmarks") == "true" for w in watches)


def test_refused_watches_relist_after_a_growing_pause(lab: Lab, store: Store) -> None:
    lab.server.expire_watches = True
    journal = ChangeJournal(
        store=store, clock=lab.cluster.clock, cluster="lab", namespaces=["old"], kinds=[CONFIG_MAP]
    )
    watcher = JournalWatcher(
        journal=journal, watcher=lab.kube, timeout_s=60, backoff_s=0.1, max_backoff_s=0.8
    )
    run_for(lab, watcher, 4.0)

    lists = [s.at for s in lab.server.requests("/configmaps", watch=False)]
    watches = lab.server.requests("/configmaps", watch=True)
    # Each list is followed by one refused watch; a tight loop would have sent hundreds.
    assert 4 <= len(lists) <= 15, len(lists)
    assert len(watches) in (len(lists) - 1, len(lists))
    gaps = [later - earlier for earlier, later in itertools.pairwise(lists)]
    # The n-th pause is at least half of min(0.1 * 2**n, 0.8) (jitter takes up to half off);
    # lower bounds only, which a slow machine cannot break.
    for n, gap in enumerate(gaps):
        assert gap >= 0.5 * min(0.1 * 2**n, 0.8), gaps


def test_the_backoff_doubles_to_its_ceiling_and_relists_stop_once_watches_are_healthy(
    lab: Lab, store: Store
) -> None:
    lab.server.expire_watches = True
    journal = ChangeJournal(
        store=store, clock=lab.cluster.clock, cluster="lab", namespaces=["old"], kinds=[CONFIG_MAP]
    )
    watcher = JournalWatcher(
        journal=journal,
        watcher=lab.kube,
        timeout_s=1,
        backoff_s=0.05,
        max_backoff_s=0.2,
        jitter=lambda: 1.0,  # no jitter: every pause is the full backoff
    )
    watcher.start()
    try:
        wait = time.monotonic() + 10
        while len(lab.server.requests("/configmaps", watch=False)) < 5:
            assert time.monotonic() < wait, "the relists"
            time.sleep(0.02)
        lab.server.expire_watches = False  # the server keeps history again: healthy watches
        healthy_from = time.monotonic()
        while len(lab.server.requests("/configmaps", watch=True)) < 8:
            assert time.monotonic() < wait + 10, "the healthy watches"
            time.sleep(0.02)
    finally:
        run_for(lab, watcher, 0.0, started=True)
    lists = [s.at for s in lab.server.requests("/configmaps", watch=False)]
    gaps = [later - earlier for earlier, later in itertools.pairwise(lists)]
    for n, gap in enumerate(gaps[:4]):
        assert gap >= min(0.05 * 2**n, 0.2), gaps
    # Once watches are healthy again, nothing is listed any more: at most the one relist
    # that was already waiting out its pause.
    assert len([at for at in lists if at > healthy_from]) <= 1, (lists, healthy_from)
