"""The incident loop in its own process, for the kill-and-resume test.

    python -m tests.agents.incident.resume_worker --kubeconfig K --db URL --kill-at diagnosed
    python -m tests.agents.incident.resume_worker --kubeconfig K --db URL --resume

`--kill-at STATE` SIGKILLs the process the moment the machine announces it entered STATE (the
transition is persisted before it is announced). `--resume` recovers interrupted transactions
and drives every open incident to its end, as the bot does at start.

`--elect IDENTITY` makes the worker a replica: it campaigns for the lab's leader Lease and
works only once it leads (printing `follows` when it first finds another leader, then
`leads <unix time>`), as the bot's singleton work does; `--go-file F` makes a leader wait for F
before working, so that a test can start the follower first.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.clock import SystemClock
from agents.detection.detector import DetectorConfig
from agents.detection.events import Detection
from agents.detection.scan_rules import ScanConfig
from agents.incident.events import IncidentEvent, StateChanged
from agents.incident.headless import HeadlessLoop, auto_approve, never_approve
from agents.leadership import LeaderElector, LeaseConfig
from agents.policy import build_policy
from agents.tnr import TnrLimits, recover
from agents.wiring import build_brain
from storage import Store

NS = "hotel-reservation"
LIMITS = TnrLimits(settle_min_s=0.5, settle_timeout_s=5, sustain_s=2, poll_s=0.5, lock_ttl_s=3)
#: The replicas' lease: short, so that a takeover takes seconds.
LEASE = LeaseConfig(
    namespace="default", name="resume-test-leader", lease_s=3.0, renew_deadline_s=2.0, retry_s=0.25
)


#: Set when the worker is done: its elector's release is then no loss of the lease.
finishing = threading.Event()


class KillAt:
    def __init__(self, state: str | None) -> None:
        self._state = state

    def notify(self, event: IncidentEvent) -> None:
        if isinstance(event, StateChanged) and event.incident.state.value == self._state:
            os.kill(os.getpid(), signal.SIGKILL)

    def detected(self, detection: Detection) -> None:
        # The detector persists a new incident in DETECTED (with its alerts and timeline)
        # before it hands back the "opened" notification.
        if detection.opened and self._state == "detected":
            os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--kill-at")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--autonomy", default="autonomous")
    parser.add_argument("--elect")
    parser.add_argument("--go-file", type=Path)
    args = parser.parse_args(argv)
    cluster = KubernetesCluster.connect(kubeconfig=args.kubeconfig, cluster_name="lab")
    elector = _lead(cluster, args.elect, args.go_file) if args.elect else None
    store = Store.connect(args.db)
    clock = SystemClock()
    killer = KillAt(None if args.resume else args.kill_at)
    brain = build_brain(
        store=store,
        reader=cluster,
        writer=cluster,
        metrics=None,  # the lab's telemetry lives in the parent; cluster state is enough here
        clock=clock,
        namespaces=[NS],
        policy=build_policy({"defaults": {"autonomy": args.autonomy, "attempts": 3}}),
        notifier=killer,
        holder=f"replica-{args.elect}/worker" if args.elect else "resume-test",  # a pod each
        limits=LIMITS,
        detector_config=DetectorConfig(grace_s={"scan": 0.0}),
        scan_config=ScanConfig(unschedulable_for_s=0.0, not_ready_for_s=0.0, unavailable_for_s=0.0),
    )
    loop = HeadlessLoop(
        machine=brain.machine,
        detector=brain.detector,
        clock=clock,
        reader=cluster,
        scanner=brain.scanner,
        journal=brain.journal,
        approver=auto_approve if args.resume else never_approve,
        namespaces=[NS],
        on_detection=killer.detected,
    )
    if args.resume:
        recover(brain.engine, brain.undoer, wait_s=LIMITS.lock_ttl_s + 2)

    def ended() -> bool:
        incidents = loop.incidents()
        return bool(incidents) and all(loop.ended(i.id) for i in incidents)

    finished = loop.run(until=ended, timeout_s=60, step_s=0.5)
    if elector is not None:
        finishing.set()
        elector.stop()
    store.close()
    cluster.close()
    return 0 if finished else 3


def _lead(cluster: KubernetesCluster, identity: str, go_file: Path | None) -> LeaderElector:
    """Campaign until this replica leads (then wait for `go_file`, if any)."""
    leading = threading.Event()

    def stopped() -> None:
        if not finishing.is_set():  # lost the lease mid-work: stop dead, as the bot exits
            os.kill(os.getpid(), signal.SIGKILL)

    elector = LeaderElector(
        cluster,
        LEASE,
        identity=identity,
        on_started=lambda token: leading.set(),
        on_stopped=stopped,
    )
    elector.start()
    if not leading.is_set():
        print("follows", flush=True)
    if not leading.wait(120):
        raise SystemExit(4)
    print(f"leads {time.time():.3f}", flush=True)
    while go_file is not None and not go_file.exists():
        time.sleep(0.05)
    return elector


if __name__ == "__main__":
    sys.exit(main())
