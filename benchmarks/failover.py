"""Failover benchmark: how long a replica set is without a leader, and whether two replicas
ever run a singleton job at once, over repeated leader failures.

Three replicas elect a leader through a `coordination.k8s.io/v1` Lease on the lab's API server
(served over HTTP, read and written by the production Kubernetes adapter), with the production
elector (`agents.leadership.LeaderElector`) and the default-shaped timings scaled down (lease
4 s, renew deadline 3 s, retry 0.5 s). Each replica runs a singleton job every 50 ms, gated
exactly as `bot.services` gates the scan, the journal, digests and housekeeping: a pass runs
only when `fenced()` says this replica surely leads.

Each failover takes the current leader down in one of two ways, alternately:

* `kill` — the process stops (`halt()`: no renewal, no release, no callback), as a SIGKILL or
  a node loss leaves it; another replica must wait out the lease.
* `partition` — the process keeps running but every call to the API server fails (a network
  partition): it must stop running its jobs by itself (renew deadline), before another
  replica's lease expiry lets that one lead.

The downed replica is replaced by a new one (a pod restart) before the next failover.
Measured per failover: the time from the failure to the next leader's first pass (takeover),
and *duplicated runs* — passes of a replica that is not the newest leader, made after the
newest leader started (expected: 0).

Writes `docs/benchmarks/failover.md`. Run: `.venv/bin/python benchmarks/failover.py
[--failovers N]`. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.adapters.kubernetes_cluster import KubernetesCluster  # noqa: E402
from agents.errors import TransientError  # noqa: E402
from agents.leadership import LeaderElector, LeaseConfig  # noqa: E402
from agents.model import KubeObject, ObjectRef  # noqa: E402
from lab.sim.world import LabWorld, WorldConfig  # noqa: E402

_T = TypeVar("_T")
OUT = ROOT / "docs" / "benchmarks" / "failover.md"
TIMINGS = LeaseConfig(namespace="default", lease_s=4.0, renew_deadline_s=3.0, retry_s=0.5)
JOB_EVERY_S = 0.05


class Partitionable:
    """The adapter, with a switch that makes every call fail as an unreachable API does."""

    def __init__(self, cluster: KubernetesCluster) -> None:
        self._cluster = cluster
        self.cut = False

    def _check(self) -> None:
        if self.cut:
            raise TransientError("the API server is unreachable (partition)")

    def get(self, ref: ObjectRef) -> KubeObject:
        self._check()
        return self._cluster.get(ref)

    def create(self, obj: KubeObject) -> KubeObject:
        self._check()
        return self._cluster.create(obj)

    def replace(self, obj: KubeObject) -> KubeObject:
        self._check()
        return self._cluster.replace(obj)


@dataclass
class Replica:
    name: str
    api: Partitionable
    elector: LeaderElector = field(init=False)
    started_at: float | None = None  # when it began leading (monotonic)
    runs: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self, ledger: Ledger) -> None:
        def started(token: int) -> None:
            self.started_at = time.monotonic()
            ledger.leaders.append((self.started_at, self.name))

        self.elector = LeaderElector(
            self.api, TIMINGS, identity=self.name, on_started=started, on_stopped=lambda: None
        )
        threading.Thread(target=self._job, name=f"job {self.name}", daemon=True).start()
        threading.Thread(target=self.elector.start, daemon=True).start()

    def _job(self) -> None:
        while not self._stop.wait(JOB_EVERY_S):
            if self.elector.fenced():  # the gate of bot.services._gate
                self.runs.append(time.monotonic())

    def stop(self) -> None:
        self._stop.set()
        self.elector.halt()


@dataclass
class Ledger:
    leaders: list[tuple[float, str]] = field(default_factory=list)  # (since, replica)


@dataclass(frozen=True, slots=True, kw_only=True)
class Failover:
    how: str
    takeover_s: float
    duplicates: int


def duplicates(replicas: list[Replica], ledger: Ledger) -> int:
    """Passes made by a replica after a newer leader had started."""
    count = 0
    for replica in replicas:
        later = [t for t, name in ledger.leaders if name != replica.name]
        for at in replica.runs:
            newer = [t for t in later if t <= at]
            mine = [t for t, name in ledger.leaders if name == replica.name and t <= at]
            if newer and mine and max(newer) > max(mine):
                count += 1
    return count


def run(failovers: int) -> list[Failover]:
    results: list[Failover] = []
    with tempfile.TemporaryDirectory() as home:
        config = WorldConfig(
            apps=(), stepped=False, serve_api=True, kubeconfig=Path(home) / "kubeconfig"
        )
        with LabWorld(config) as world:
            assert world.config.kubeconfig is not None
            ledger = Ledger()
            connections: list[KubernetesCluster] = []

            def replica(n: int) -> Replica:
                cluster = KubernetesCluster.connect(
                    kubeconfig=world.config.kubeconfig, cluster_name="lab"
                )
                connections.append(cluster)
                r = Replica(name=f"replica-{n}", api=Partitionable(cluster))
                r.start(ledger)
                return r

            alive = [replica(n) for n in range(3)]
            everyone = list(alive)
            born = 3
            try:
                _wait(lambda: next((r for r in alive if r.elector.leading), None), 10)
                for i in range(failovers):
                    leader = next(r for r in alive if r.elector.leading)
                    how = "kill" if i % 2 == 0 else "partition"
                    failed_at = time.monotonic()
                    if how == "kill":
                        leader.stop()
                    else:
                        leader.api.cut = True
                    others = [r for r in alive if r is not leader]
                    new = _wait(partial(_newer_leader, others, failed_at), TIMINGS.lease_s * 4)
                    first = _wait(partial(_first_pass, new, failed_at), 5)
                    time.sleep(1.0)  # let a partitioned old leader show any late pass
                    results.append(
                        Failover(
                            how=how,
                            takeover_s=first - failed_at,
                            duplicates=duplicates(everyone, ledger),
                        )
                    )
                    print(
                        f"failover {i + 1:2d} ({how}): {results[-1].takeover_s:.2f} s", flush=True
                    )
                    leader.stop()
                    alive.remove(leader)
                    fresh = replica(born)
                    born += 1
                    alive.append(fresh)
                    everyone.append(fresh)
            finally:
                for r in everyone:
                    r.stop()
                for c in connections:
                    c.close()
    return results


def _newer_leader(replicas: list[Replica], since: float) -> Replica | None:
    return next((r for r in replicas if r.started_at and r.started_at > since), None)


def _first_pass(replica: Replica, since: float) -> float | None:
    return next((t for t in replica.runs if t > since), None)


def _wait(check: Callable[[], _T | None], timeout_s: float) -> _T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value is not None:
            return value
        time.sleep(0.01)
    raise TimeoutError(f"nothing after {timeout_s:g} s")


def report(results: list[Failover]) -> str:
    lines = [
        "# Failover: takeover time and duplicated singleton runs",
        "",
        f"Written by `benchmarks/failover.py` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        f"({platform.machine()}, Python {platform.python_version()}). Three replicas, the "
        f"production elector on the lab's Lease over HTTP; lease {TIMINGS.lease_s:g} s, renew "
        f"deadline {TIMINGS.renew_deadline_s:g} s, retry {TIMINGS.retry_s:g} s; a singleton "
        f"job every {JOB_EVERY_S * 1000:g} ms gated by `fenced()`.",
        "",
        "| # | failure | takeover (s) | duplicated runs so far |",
        "|---:|---|---:|---:|",
    ]
    for i, r in enumerate(results, 1):
        lines.append(f"| {i} | {r.how} | {r.takeover_s:.2f} | {r.duplicates} |")
    lines += [
        "",
        "| failure | n | takeover median (s) | max (s) | bound (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for how in ("kill", "partition"):
        times = [r.takeover_s for r in results if r.how == how]
        if times:
            bound = TIMINGS.lease_s + 2 * TIMINGS.retry_s
            lines.append(
                f"| {how} | {len(times)} | {statistics.median(times):.2f} | {max(times):.2f} "
                f"| {bound:g} |"
            )
    total = results[-1].duplicates if results else 0
    lines += [
        "",
        f"**Duplicated singleton runs over {len(results)} failovers: {total}** (expected 0).",
        "",
        "The bound is the lease duration plus two retry periods: a follower counts the lease "
        "from when it *saw* the last renewal (it never trusts another replica's clock), and "
        "tries once per retry period. A partitioned leader stops its jobs at its renew "
        "deadline, which is shorter than the lease, so its last pass always precedes the new "
        "leader's first. In the bot, a takeover is followed by `resume()` (recovery of "
        "interrupted transactions, then every open incident driven) and the first scan, so "
        "an incident resumes within lease + retry + one scan interval.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--failovers", type=int, default=20)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    results = run(args.failovers)
    OUT.write_text(report(results))
    print(f"wrote {OUT.relative_to(ROOT)}")
    if results and results[-1].duplicates:
        sys.exit(1)


if __name__ == "__main__":
    main()
