"""The incident loop in its own process, for the kill-and-resume test.

    python -m tests.agents.incident.resume_worker --kubeconfig K --db URL --kill-at diagnosed
    python -m tests.agents.incident.resume_worker --kubeconfig K --db URL --resume

`--kill-at STATE` SIGKILLs the process the moment the machine announces it entered STATE (the
transition is persisted before it is announced). `--resume` recovers interrupted transactions
and drives every open incident to its end, as the bot does at start.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.clock import SystemClock
from agents.detection.detector import DetectorConfig
from agents.detection.events import Detection
from agents.detection.scan_rules import ScanConfig
from agents.incident.events import IncidentEvent, StateChanged
from agents.incident.headless import HeadlessLoop, auto_approve, never_approve
from agents.policy import build_policy
from agents.tnr import TnrLimits, recover
from agents.wiring import build_brain
from storage import Store

NS = "hotel-reservation"
LIMITS = TnrLimits(settle_min_s=0.5, settle_timeout_s=5, sustain_s=2, poll_s=0.5, lock_ttl_s=3)


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
    args = parser.parse_args(argv)
    cluster = KubernetesCluster.connect(kubeconfig=args.kubeconfig, cluster_name="lab")
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
        holder="resume-test",
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
    store.close()
    cluster.close()
    return 0 if finished else 3


if __name__ == "__main__":
    sys.exit(main())
