"""A transaction engine in its own process, for the crash harness.

    python -m tests.agents.tnr.crash_worker --kubeconfig K --db URL --plan abort --kill-at settle
    python -m tests.agents.tnr.crash_worker --kubeconfig K --db URL --recover

With `--kill-at POINT` the process SIGKILLs itself the first time the engine reaches that
checkpoint: no `finally`, no lock release, nothing flushed — a real crash. `--recover` runs the
engine's recovery (as the bot does at start) and prints what it did as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from agents.actions import Action, ScaleWorkload, SetScheduling
from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.clock import SystemClock
from agents.model import ObjectRef, Scope
from agents.severity import SeverityMeter
from agents.tnr import TnrLimits, TransactionEngine, TransactionRequest, Undoer, recover
from agents.tnr.ledger import StorageLedger
from storage import Store

NS = "hotel-reservation"
SCOPE = Scope(cluster="lab", namespace=NS)
HOLDER = "crash-harness"
LIMITS = TnrLimits(
    settle_min_s=0.5,
    settle_timeout_s=3.0,
    sustain_s=1.5,
    poll_s=0.5,
    lock_ttl_s=3.0,
    deadline_s=120,
)


def deployment(name: str) -> ObjectRef:
    return ObjectRef(api_version="apps/v1", kind="Deployment", name=name, namespace=NS)


#: Two writes each, so that a crash can land between them.
PLANS: dict[str, tuple[Action, ...]] = {
    # Pins two workloads to a node that does not exist: new pods stay Pending, μ rises, the
    # validation fails and the engine aborts.
    "abort": (
        SetScheduling(target=deployment("frontend"), node_selector={"disk": "no-such-node"}),
        SetScheduling(target=deployment("search"), node_selector={"disk": "no-such-node"}),
    ),
    # Harmless scale-ups: validation passes and the engine commits.
    "commit": (
        ScaleWorkload(target=deployment("frontend"), replicas=3, from_replicas=2),
        ScaleWorkload(target=deployment("search"), replicas=2, from_replicas=1),
    ),
}


def killer(kill_at: str | None) -> Callable[[str], None]:
    def checkpoint(name: str) -> None:
        if name == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    return checkpoint


def _engine(kubeconfig: Path, db: str, kill_at: str | None) -> TransactionEngine:
    cluster = KubernetesCluster.connect(kubeconfig=kubeconfig, cluster_name="lab")
    store = Store.connect(db)
    return TransactionEngine(
        reader=cluster,
        writer=cluster,
        meter=SeverityMeter(reader=cluster, metrics=None),
        ledger=StorageLedger(store),
        clock=SystemClock(),
        holder=HOLDER,
        limits=LIMITS,
        checkpoint=killer(kill_at),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--plan", choices=sorted(PLANS))
    parser.add_argument("--undo", action="store_true", help="commit the plan, then undo it")
    parser.add_argument("--kill-at")
    parser.add_argument("--recover", action="store_true")
    args = parser.parse_args(argv)
    if args.recover:
        engine = _engine(args.kubeconfig, args.db, None)
        # The killed engine's lease outlives it: wait for it to run out, as the bot does.
        results = recover(engine, Undoer(engine), wait_s=LIMITS.lock_ttl_s + 2)
        print(json.dumps([{"id": r.transaction_id, "outcome": r.outcome} for r in results]))
        return 0
    # When undoing, the commit must not be killed: only the undo is.
    engine = _engine(args.kubeconfig, args.db, None if args.undo else args.kill_at)
    request = TransactionRequest(scope=SCOPE, actions=PLANS[args.plan], mu0=10.0, actor="harness")
    outcome = engine.run(request)
    print(json.dumps({"transaction": outcome.transaction_id, "kind": outcome.kind}))
    if args.undo:
        undoer = Undoer(engine, checkpoint=killer(args.kill_at))
        undoer.undo(outcome.transaction_id, actor="harness")
    return 0


if __name__ == "__main__":
    sys.exit(main())
