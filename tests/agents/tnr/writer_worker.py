"""An engine in its own process running one transaction, for the writer-exclusivity test.

python -m tests.agents.tnr.writer_worker --kubeconfig K --db URL --namespace NS --name W
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agents.actions import RolloutRestart, ScaleWorkload
from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.clock import SystemClock
from agents.model import ObjectRef, Scope
from agents.severity import SeverityMeter
from agents.tnr import TnrLimits, TransactionEngine, TransactionRequest
from agents.tnr.ledger import StorageLedger
from storage import Store

# The lock's TTL is generous: renewal happens between μ polls, and on a loaded CI machine a
# poll can take seconds; an expired lease would (rightly) fence the first writer mid-way and
# turn an exclusivity test into a timing one. Expiry itself is tested in tests/storage.
LIMITS = TnrLimits(
    settle_min_s=0.5, settle_timeout_s=4, sustain_s=2, poll_s=0.5, lock_ttl_s=60, lock_wait_s=150
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--deployment", required=True)
    args = parser.parse_args(argv)
    cluster = KubernetesCluster.connect(kubeconfig=args.kubeconfig, cluster_name="lab")
    store = Store.connect(args.db)
    clock = SystemClock()
    engine = TransactionEngine(
        reader=cluster,
        writer=cluster,
        meter=SeverityMeter(reader=cluster, metrics=None),
        ledger=StorageLedger(store),
        clock=clock,
        holder=args.name,
        limits=LIMITS,
    )
    target = ObjectRef(
        api_version="apps/v1", kind="Deployment", name=args.deployment, namespace=args.namespace
    )
    # Two writes with a settle and a sustain window between the lock and its release.
    actions = (
        RolloutRestart(target=target, stamp=f"{args.name}-{clock.now().isoformat()}"),
        ScaleWorkload(target=target, replicas=2),
    )
    scope = Scope(cluster="lab", namespace=args.namespace)
    outcome = engine.run(
        TransactionRequest(scope=scope, actions=actions, mu0=100.0, actor=args.name)
    )
    print(json.dumps({"transaction": outcome.transaction_id, "kind": outcome.kind}))
    store.close()
    cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
