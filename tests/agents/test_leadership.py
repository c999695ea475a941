"""Leader election on the lab's Lease API through the official client: one leader among
replicas, takeover after a silent leader's lease, a fast handover on release, a leader that
cannot renew steps down before anyone may take over, and a 409 decides a race."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.errors import TransientError
from agents.leadership import API_VERSION, LeaderElector, LeaseConfig, NotLeader
from agents.model import KubeObject, ObjectRef
from lab.sim.world import LabWorld, WorldConfig

FAST = LeaseConfig(namespace="default", lease_s=1.5, renew_deadline_s=1.0, retry_s=0.1)
REF = ObjectRef(api_version=API_VERSION, kind="Lease", name=FAST.name, namespace="default")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[KubernetesCluster]:
    config = WorldConfig(apps=(), stepped=False, serve_api=True, kubeconfig=tmp_path / "kc")
    with LabWorld(config):
        client = KubernetesCluster.connect(kubeconfig=tmp_path / "kc", cluster_name="lab")
        yield client
        client.close()


class Replica:
    """An elector and the record of what its callbacks were told."""

    def __init__(self, api: object, identity: str, config: LeaseConfig = FAST) -> None:
        self.started: list[int] = []
        self.stopped = threading.Event()
        self.elector = LeaderElector(
            api,  # type: ignore[arg-type]
            config,
            identity=identity,
            on_started=self.started.append,
            on_stopped=self.stopped.set,
        )

    def __enter__(self) -> Replica:
        self.elector.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.elector.stop()


def wait_for(check: Callable[[], bool], timeout_s: float = 10.0) -> float:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout_s, "timed out"
        time.sleep(0.02)
    return time.monotonic() - started


def holder(cluster: KubernetesCluster) -> str:
    return str(cluster.get(REF).body["spec"].get("holderIdentity") or "")


def test_one_of_two_replicas_leads_and_the_lease_names_it(cluster: KubernetesCluster) -> None:
    with Replica(cluster, "a") as a, Replica(cluster, "b") as b:
        wait_for(lambda: a.elector.leading or b.elector.leading)
        time.sleep(FAST.lease_s * 2)  # long enough for a wrong second leader to appear
        assert a.elector.leading != b.elector.leading
        leader = a if a.elector.leading else b
        assert holder(cluster) == leader.elector.identity
        assert leader.started == [leader.elector.fence()]
        follower = b if leader is a else a
        assert follower.started == []
        with pytest.raises(NotLeader):
            follower.elector.fence()
        assert follower.elector.status().holder == leader.elector.identity


def test_a_silent_leader_is_replaced_after_its_lease_and_the_token_grows(
    cluster: KubernetesCluster,
) -> None:
    with Replica(cluster, "a") as a:
        wait_for(lambda: a.elector.leading)
        token = a.elector.fence()
    # `a` stopped and released; write its record back as a leader that simply went silent.
    lease = cluster.get(REF)
    spec = {**lease.body["spec"], "holderIdentity": "a", "leaseDurationSeconds": 2}
    cluster.replace(KubeObject({**lease.body, "spec": spec}))
    with Replica(cluster, "b") as b:
        waited = wait_for(lambda: b.elector.leading)
        assert 2.0 <= waited < 2.0 + 1.0, waited  # the lease, plus at most a few retries
        assert b.started[0] > token
        assert holder(cluster) == "b"


def test_a_released_lease_is_taken_within_a_retry(cluster: KubernetesCluster) -> None:
    with Replica(cluster, "a") as a, Replica(cluster, "b") as b:
        wait_for(lambda: a.elector.leading or b.elector.leading)
        leader, follower = (a, b) if a.elector.leading else (b, a)
        leader.elector.stop()
        assert leader.stopped.is_set()
        waited = wait_for(lambda: follower.elector.leading)
        assert waited < FAST.lease_s  # no need to wait out the lease
        assert holder(cluster) == follower.elector.identity


class Unreachable:
    """The cluster, until `cut` is set: then every call fails as a refused connection."""

    def __init__(self, cluster: KubernetesCluster) -> None:
        self.cluster = cluster
        self.cut = False

    def _check(self) -> None:
        if self.cut:
            raise TransientError("connection refused")

    def get(self, ref: ObjectRef) -> KubeObject:
        self._check()
        return self.cluster.get(ref)

    def create(self, obj: KubeObject) -> KubeObject:
        self._check()
        return self.cluster.create(obj)

    def replace(self, obj: KubeObject) -> KubeObject:
        self._check()
        return self.cluster.replace(obj)


def test_a_leader_that_cannot_renew_steps_down_before_another_may_lead(
    cluster: KubernetesCluster,
) -> None:
    cut = Unreachable(cluster)
    with Replica(cut, "a") as a:
        wait_for(lambda: a.elector.leading)
        with Replica(cluster, "b") as b:
            cut.cut = True
            cut_at = time.monotonic()
            wait_for(a.stopped.is_set)
            stepped_down = time.monotonic() - cut_at
            with pytest.raises(NotLeader):
                a.elector.fence()
            wait_for(lambda: b.elector.leading)
            took_over = time.monotonic() - cut_at
        assert stepped_down <= FAST.renew_deadline_s + 2 * FAST.retry_s
        assert took_over >= FAST.lease_s - FAST.retry_s
        assert stepped_down < took_over
        # Once stepped down, a process never campaigns again (its restart does).
        cut.cut = False
        time.sleep(FAST.lease_s)
        assert not a.elector.leading
        assert a.started == [a.started[0]]


def test_a_race_for_a_free_lease_is_decided_by_the_api_server(cluster: KubernetesCluster) -> None:
    replicas = [Replica(cluster, f"r{i}") for i in range(4)]
    for replica in replicas:
        replica.elector.start()
    try:
        wait_for(lambda: any(r.elector.leading for r in replicas))
        time.sleep(FAST.lease_s)
        assert sum(r.elector.leading for r in replicas) == 1
        assert sum(len(r.started) for r in replicas) == 1
    finally:
        for replica in replicas:
            replica.elector.stop()


def test_timings_that_cannot_fence_are_refused() -> None:
    bad = LeaseConfig(namespace="default", lease_s=10, renew_deadline_s=10, retry_s=2)
    assert "renew deadline" in bad.problem()
    with pytest.raises(ValueError, match="lease timings"):
        Replica(object(), "a", bad)
