"""The scenario of issue 13, part 3: the Kubernetes API stalls mid-validation for longer than
the writer lease. The writer's calls time out within their deadlines, its heartbeat keeps the
lease, and a recovery pass running beside it all along never takes the transaction over: the
transaction ends by its own writer's hand. Lab over HTTP behind a TCP proxy the test pauses;
real SQLite; assertions on the ledger and the audit trail, not on durations.

With the heartbeat switched off, the case whose calls may block longer than the lease fails
(recovery takes the transaction over from its live writer): what issue 13 reported.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

import pytest
import yaml

from agents.actions import ScaleWorkload
from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.deadlines import CallDeadline
from agents.model import TransactionStatus
from agents.severity import SeverityMeter
from agents.tnr import TnrLimits, TransactionEngine, TransactionRequest, Undoer, recover
from tests.agents.tnr.conftest import SCOPE, Rig, deployment

LEASE_S = 6.0
LIMITS = TnrLimits(
    sustain_s=20, poll_s=2, settle_min_s=2, settle_timeout_s=60, lock_ttl_s=LEASE_S, deadline_s=600
)
#: One call gives up after 2 × 1 s, a third of the lease, as start-up requires; and, to show
#: that the heartbeat does not depend on it, calls that may block twice the lease.
WITHIN_RULE = CallDeadline(timeout_s=1.0, attempts=2)
LONGER_THAN_THE_LEASE = CallDeadline(timeout_s=4.0, attempts=3)


class PausableProxy:
    """A TCP forwarder to the lab's API server that can stop passing bytes (a stalled API)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self.flowing = threading.Event()
        self.flowing.set()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                client.close()
                continue
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                self.flowing.wait()  # while stalled, bytes go nowhere
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.close()

    def close(self) -> None:
        self._closed.set()
        self.flowing.set()
        self._listener.close()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("deadline", [WITHIN_RULE, LONGER_THAN_THE_LEASE], ids=["2x1s", "3x4s"])
def test_a_stall_longer_than_the_lease_does_not_hand_a_live_writer_to_recovery(
    rig: Rig, tmp_path: Path, deadline: CallDeadline
) -> None:
    assert rig.world.config.kubeconfig is not None
    config = yaml.safe_load(rig.world.config.kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]["server"]
    host, port = server.removeprefix("http://").split(":")
    proxy = PausableProxy((host, int(port)))
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{proxy.port}"
    stalled_config = tmp_path / "kubeconfig-proxied"
    stalled_config.write_text(yaml.safe_dump(config))
    cluster = KubernetesCluster.connect(
        kubeconfig=stalled_config, cluster_name="lab", deadline=deadline
    )

    stalls: list[threading.Thread] = []

    def checkpoint(name: str) -> None:
        if name == "sustain" and not stalls:  # the first sample of the sustain window

            def stall() -> None:
                proxy.flowing.clear()
                time.sleep(3 * LEASE_S)
                proxy.flowing.set()

            stalls.append(threading.Thread(target=stall, daemon=True))
            stalls[0].start()

    engine = TransactionEngine(
        reader=cluster,
        writer=cluster,
        meter=SeverityMeter(reader=cluster, metrics=rig.world.metrics),
        ledger=rig.ledger,
        clock=rig.world.clock,
        holder="stratus/host-a/41",
        limits=LIMITS,
        checkpoint=checkpoint,
    )
    # Recovery as the bot runs it, through its own (unstalled) connection and holder.
    rescuer = TransactionEngine(
        reader=rig.cluster,
        writer=rig.cluster,
        meter=SeverityMeter(reader=rig.cluster, metrics=rig.world.metrics),
        ledger=rig.ledger,
        clock=rig.world.clock,
        holder="stratus/host-a/41/recovery",
        limits=LIMITS,
    )
    finished = threading.Event()
    passes: list[str] = []

    def recovery_loop() -> None:
        while not finished.is_set():
            for result in recover(rescuer, Undoer(rescuer)):
                passes.append(result.message if result.outcome is None else "TAKEN OVER")
            finished.wait(0.5)

    looper = threading.Thread(target=recovery_loop, daemon=True)
    looper.start()
    try:
        outcome = engine.run(
            TransactionRequest(
                scope=SCOPE,
                actions=(
                    ScaleWorkload(target=deployment("frontend"), replicas=3, from_replicas=2),
                ),
                mu0=10.0,
                actor="U0ALICE",
            )
        )
    finally:
        finished.set()
        looper.join(timeout=60)
        for thread in stalls:
            thread.join(timeout=60)
        cluster.close()
        proxy.close()

    assert stalls, "the sustain window never started: nothing was stalled"
    assert "TAKEN OVER" not in passes
    assert passes and set(passes) == {"scope busy; left for later"}
    tx = rig.ledger.transaction(outcome.transaction_id)
    assert tx.status in (
        TransactionStatus.COMMITTED,
        TransactionStatus.ABORTED,
        TransactionStatus.ESCALATED,
    )
    actors = {r.actor for r in rig.store.audit.query(transaction_id=tx.id)}
    assert actors == {"U0ALICE"}  # every step by the writer itself, none by recovery
