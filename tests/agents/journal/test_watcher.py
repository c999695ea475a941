"""The journal's watch threads against a scripted `ChangeWatcher`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from agents.errors import Expired, TransientError
from agents.journal import DEPLOYMENT, ChangeJournal, JournalWatcher
from agents.model import ChangeType, KubeObject, Scope
from lab.clock import LabClock
from storage import Store
from tests.agents.detection.fakes import FakeCluster
from tests.agents.journal.objects import creator, deployment, managed

HOTEL = Scope(cluster="lab", namespace="hotel")
Script = Callable[[str | None], Iterator[tuple[str, KubeObject]]]


def events(*items: tuple[str, KubeObject]) -> Script:
    def script(_rv: str | None) -> Iterator[tuple[str, KubeObject]]:
        yield from items

    return script


def fail(error: Exception) -> Script:
    def script(_rv: str | None) -> Iterator[tuple[str, KubeObject]]:
        # A generator, like the real watch: the error surfaces on the first `next`.
        yield from ()
        raise error

    return script


def wait_for(check: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def only_deployments(store: Store, clock: LabClock) -> ChangeJournal:
    return ChangeJournal(
        store=store, clock=clock, cluster="lab", namespaces=["hotel"], kinds=[DEPLOYMENT]
    )


def image(rv: str, tag: str, seconds: float) -> KubeObject:
    change = managed(
        "kubectl-set",
        seconds,
        {
            "f:spec": {
                "f:template": {"f:spec": {"f:containers": {'k:{"name":"geo"}': {"f:image": {}}}}}
            }
        },
    )
    return deployment(image=f"hotel/geo:{tag}", rv=rv, managers=[creator(0), change])


def test_list_watch_resume_and_relist_after_gone(
    store: Store, clock: LabClock, cluster: FakeCluster
) -> None:
    journal = only_deployments(store, clock)
    cluster.objects[("Deployment", "hotel")] = {"geo": deployment(rv="10").body}
    cluster.list_versions["Deployment"] = "15"  # the store moved on since geo last changed
    modified = image("16", "2", 5)

    def modify(_rv: str | None) -> Iterator[tuple[str, KubeObject]]:
        cluster.objects[("Deployment", "hotel")]["geo"] = modified.body
        yield "MODIFIED", modified
        yield "BOOKMARK", deployment(rv="18")

    def gone(rv: str | None) -> Iterator[tuple[str, KubeObject]]:
        cluster.list_versions["Deployment"] = "41"
        yield from fail(Expired(f"too old resource version: {rv} (40) (HTTP 410)"))(rv)

    cluster.watch_scripts[("Deployment", "hotel")] = [
        modify,
        events(),  # the server ended the watch without news
        gone,
        events(("DELETED", image("42", "2", 5))),
    ]
    watcher = JournalWatcher(journal=journal, watcher=cluster, timeout_s=1, backoff_s=0.01)
    watcher.start()
    try:
        wait_for(
            lambda: any(
                c.change_type is ChangeType.DELETED for c in journal.changes(HOTEL, None, None)
            ),
            "the deletion",
        )
    finally:
        assert watcher.stop(timeout_s=5)
    assert not watcher.running
    changes = journal.changes(HOTEL, None, None)
    assert [(c.change_type, c.manager) for c in changes] == [
        (ChangeType.MODIFIED, "kubectl-set"),
        (ChangeType.DELETED, "unknown"),
    ]
    rvs = [rv for kind, _ns, rv in cluster.watch_calls[:4]]
    # from the list's version (never geo's 10), from the bookmark, again from the bookmark
    # when the watch ended, then (410) from a fresh list's version
    assert rvs == ["15", "18", "18", "41"]
    assert cluster.list_calls.count(("Deployment", "hotel")) == 2


def test_transient_errors_resume_from_the_same_version(
    store: Store, clock: LabClock, cluster: FakeCluster
) -> None:
    journal = only_deployments(store, clock)
    cluster.objects[("Deployment", "hotel")] = {"geo": deployment(rv="10").body}
    cluster.list_versions["Deployment"] = "10"
    cluster.watch_scripts[("Deployment", "hotel")] = [
        fail(TransientError("connection reset", retry_after_s=0.01)),
        events(("MODIFIED", image("11", "3", 5))),
    ]
    watcher = JournalWatcher(journal=journal, watcher=cluster, timeout_s=1, backoff_s=0.01)
    watcher.start()
    try:
        wait_for(lambda: len(journal.changes(HOTEL, None, None)) == 1, "the change")
    finally:
        assert watcher.stop(timeout_s=5)
    assert [rv for _k, _n, rv in cluster.watch_calls[:2]] == ["10", "10"]
    assert cluster.list_calls.count(("Deployment", "hotel")) == 1


def test_stop_ends_a_blocked_watch_when_the_server_ends_it(
    store: Store, clock: LabClock, cluster: FakeCluster
) -> None:
    journal = only_deployments(store, clock)
    entered = threading.Event()

    def long_watch(_rv: str | None) -> Iterator[tuple[str, KubeObject]]:
        entered.set()
        time.sleep(0.3)  # the server's timeoutSeconds running out
        yield from ()

    cluster.watch_scripts[("Deployment", "hotel")] = [long_watch] * 100
    watcher = JournalWatcher(journal=journal, watcher=cluster, timeout_s=1)
    watcher.start()
    assert entered.wait(5)
    assert watcher.stop(timeout_s=5)
    assert not watcher.running


def test_relists_back_off_exponentially_and_a_healthy_watch_resets_the_backoff(
    store: Store, clock: LabClock, cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    journal = only_deployments(store, clock)
    cluster.objects[("Deployment", "hotel")] = {"geo": deployment(rv="10").body}
    gone = fail(Expired("too old resource version: 10 (40) (HTTP 410)"))
    cluster.watch_scripts[("Deployment", "hotel")] = [
        *[gone] * 5,
        events(("MODIFIED", image("41", "2", 5))),  # healthy: it delivered an event
        gone,
    ]
    watcher = JournalWatcher(
        journal=journal,
        watcher=cluster,
        timeout_s=1,
        backoff_s=0.01,
        max_backoff_s=0.08,
        jitter=lambda: 1.0,  # no jitter: each pause is the whole backoff
    )
    caplog.set_level(logging.INFO, logger="agents.cache.reflector")

    def pauses() -> list[str]:
        return [r.getMessage().rsplit(" ", 1)[-1] for r in caplog.records if "relisting" in r.msg]

    watcher.start()
    try:
        wait_for(lambda: len(pauses()) == 6, "six relists")
    finally:
        assert watcher.stop(timeout_s=5)
    assert pauses() == ["0.01s", "0.02s", "0.04s", "0.08s", "0.08s", "0.01s"]
    # the first list, one per refusal (the last one perhaps cut short by stop), none after
    # the healthy watch
    assert cluster.list_calls.count(("Deployment", "hotel")) in (6, 7)


def test_a_watch_that_ends_at_once_without_news_never_spins(
    store: Store, clock: LabClock, cluster: FakeCluster
) -> None:
    # A broken proxy: every watch ends at once, empty (the fake's default with no scripts).
    journal = only_deployments(store, clock)
    watcher = JournalWatcher(
        journal=journal, watcher=cluster, timeout_s=60, backoff_s=0.05, max_backoff_s=0.2
    )
    watcher.start()
    try:
        time.sleep(1.0)
    finally:
        assert watcher.stop(timeout_s=5)
    # Pauses of at least 0.025, 0.05, then 0.1 s each: a dozen watches in a second at most
    # (a slow machine only makes fewer), not thousands; and the list is never repeated.
    assert 1 <= len(cluster.watch_calls) <= 15, len(cluster.watch_calls)
    assert cluster.list_calls.count(("Deployment", "hotel")) == 1
