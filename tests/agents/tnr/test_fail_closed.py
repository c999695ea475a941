"""Fail closed (DESIGN section 3, rule 8) on the lab cluster over HTTP: with the Kubernetes
API or the metrics down at each point of a transaction, nothing starts without a measured
μ_before, nothing commits on a window that was not wholly measured, and an abort that cannot
restore (or measure) is held with its undo entries intact — never "healthy"."""

from __future__ import annotations

from dataclasses import replace

from agents.actions import ScaleWorkload
from agents.model import OutcomeKind, TransactionStatus, UndoState
from agents.severity import SeverityMeter
from agents.tnr import TnrLimits, TransactionEngine, TransactionRequest, Undoer, UndoStatus
from agents.tnr.engine import verdict
from agents.tnr.validation import Validator
from tests.agents.tnr.conftest import SCOPE, Rig, deployment
from tests.agents.tnr.outage import FlakyCluster, FlakyMetrics, Outage

#: Short enough that Δ runs out within a test, long enough for one clean sustain window.
SHORT = TnrLimits(
    sustain_s=30, poll_s=5, settle_min_s=5, settle_timeout_s=30, lock_ttl_s=30, deadline_s=90
)


def blind_engine(rig: Rig, limits: TnrLimits = SHORT) -> tuple[TransactionEngine, Outage, Outage]:
    """An engine whose cluster calls and metrics queries fail during their outages."""
    api, metrics = Outage(rig.world.clock), Outage(rig.world.clock)
    cluster = FlakyCluster(rig.cluster, api)
    engine = TransactionEngine(
        reader=cluster,  # type: ignore[arg-type]
        writer=cluster,  # type: ignore[arg-type]
        meter=SeverityMeter(reader=cluster, metrics=FlakyMetrics(rig.world.metrics, metrics)),  # type: ignore[arg-type]
        ledger=rig.ledger,
        clock=rig.world.clock,
        holder="test-engine",
        limits=limits,
    )
    return engine, api, metrics


def scale_frontend() -> TransactionRequest:
    action = ScaleWorkload(target=deployment("frontend"), replicas=3, from_replicas=2)
    return TransactionRequest(scope=SCOPE, actions=(action,), mu0=10.0, actor="U0ALICE")


def replicas(rig: Rig) -> int:
    return int(rig.cluster.get(deployment("frontend")).body["spec"]["replicas"])


def test_verdict_refuses_to_commit_an_incomplete_window() -> None:
    decision = verdict(
        mu_before=3.0, mu_after=0.0, mu0=3.0, require_progress=True, unknown=("cluster: workloads",)
    )
    assert not decision.commit and not decision.healthy
    assert decision.reason == "sustain window not wholly measured: cluster: workloads"
    assert verdict(mu_before=3.0, mu_after=0.0, mu0=3.0, require_progress=True).commit


def test_no_transaction_starts_without_a_measured_mu_before(rig: Rig) -> None:
    engine, api, _ = blind_engine(rig)
    api.down_for(0)
    outcome = engine.run(scale_frontend())
    assert outcome.kind is OutcomeKind.NOT_STARTED
    assert outcome.reason == "not started: cannot measure cluster: workloads"
    assert not outcome.healthy and outcome.transaction_id == ""
    api.end()
    assert replicas(rig) == 2
    assert rig.ledger.interrupted() == []
    [record] = rig.store.audit.query(verb="not_started")
    assert record.detail["unknown"] == ["cluster: workloads"]


def test_metrics_down_before_the_start_also_means_not_started(rig: Rig) -> None:
    engine, _, metrics = blind_engine(rig)
    metrics.down_for(0)
    outcome = engine.run(scale_frontend())
    assert outcome.kind is OutcomeKind.NOT_STARTED
    assert "metrics: alerts" in outcome.reason and "metrics: golden signals" in outcome.reason
    assert replicas(rig) == 2


def test_a_blip_in_the_sustain_window_restarts_it_and_the_commit_is_fully_measured(
    rig: Rig,
) -> None:
    engine, api, _ = blind_engine(rig, replace(SHORT, deadline_s=600))
    api.down_for(20, 15)  # during settle/sustain: the window must start again after it
    outcome = engine.run(scale_frontend())
    assert outcome.kind is OutcomeKind.COMMITTED, outcome.reason
    assert api.refused > 0
    tx = rig.ledger.transaction(outcome.transaction_id)
    assert tx.validation["complete"] is True and tx.validation["unknown"] == []
    assert tx.validation["severity"]["complete"] is True


def test_blind_until_the_deadline_aborts_instead_of_committing(rig: Rig) -> None:
    engine, api, _ = blind_engine(rig)
    api.down_for(1, 75)  # back 14 s before Δ: too late for a whole 30 s window
    outcome = engine.run(scale_frontend())
    assert outcome.kind is OutcomeKind.ABORTED, outcome.reason
    assert "Δ = 90s ran out" in outcome.reason
    assert not outcome.healthy or outcome.mu_after == 0
    tx = rig.ledger.transaction(outcome.transaction_id)
    assert tx.status is TransactionStatus.ABORTED
    assert replicas(rig) == 2
    [entry] = rig.ledger.stack(outcome.transaction_id)
    assert entry.state is UndoState.RESTORED
    assert "commit" not in [r.verb for r in rig.store.audit.query(transaction_id=tx.id)]


def test_an_abort_that_cannot_restore_is_held_and_undo_finishes_it(rig: Rig) -> None:
    engine, api, _ = blind_engine(rig)
    api.down_for(1)  # never comes back by itself
    outcome = engine.run(scale_frontend())
    assert outcome.kind is OutcomeKind.HELD, outcome.reason
    assert not outcome.healthy and outcome.mu_after is None
    assert "1 of 1 change(s) not restored. Undo will finish the restore." in outcome.reason
    tx = rig.ledger.transaction(outcome.transaction_id)
    assert tx.status is TransactionStatus.HELD
    [entry] = rig.ledger.stack(tx.id)
    assert entry.state is UndoState.APPLIED  # not lost, not marked restored
    api.end()
    assert replicas(rig) == 3  # the write stands until the restore is finished

    # Still down: Undo says so and keeps the entry.
    api.down_for(0)
    still = Undoer(engine).undo(tx.id, actor="U0ALICE")
    assert still.status is UndoStatus.FAILED and still.message.startswith("still held")
    assert rig.ledger.transaction(tx.id).status is TransactionStatus.HELD
    assert rig.ledger.stack(tx.id)[0].state is UndoState.APPLIED

    api.end()
    done = Undoer(engine).undo(tx.id, actor="U0ALICE")
    assert done.status is UndoStatus.UNDONE, done.message
    assert replicas(rig) == 2
    finished = rig.ledger.transaction(tx.id)
    assert finished.status is TransactionStatus.ABORTED
    assert "held" not in (finished.reason or "")
    assert rig.ledger.stack(tx.id)[0].state is UndoState.RESTORED


def test_a_rollback_whose_result_cannot_be_measured_is_held(rig: Rig) -> None:
    engine, _, metrics = blind_engine(rig, replace(SHORT, deadline_s=45, settle_timeout_s=10))
    metrics.down_for(1)  # the cluster answers (restore works); the metrics never do
    outcome = engine.run(scale_frontend())
    assert outcome.kind is OutcomeKind.HELD, outcome.reason
    assert "restored 1 of 1 change(s), but cannot measure metrics: alerts" in outcome.reason
    assert replicas(rig) == 2
    tx = rig.ledger.transaction(outcome.transaction_id)
    assert tx.status is TransactionStatus.HELD and tx.mu_after is None
    metrics.end()
    done = Undoer(engine).undo(tx.id, actor="U0ALICE")
    assert done.status is UndoStatus.UNDONE, done.message
    assert rig.ledger.transaction(tx.id).status is TransactionStatus.ABORTED


def test_settle_counts_an_unreadable_workload_as_not_converged(rig: Rig) -> None:
    engine, api, _ = blind_engine(rig)
    cluster = FlakyCluster(rig.cluster, api)
    validator = Validator(
        reader=cluster,  # type: ignore[arg-type]
        meter=engine.meter,
        clock=rig.world.clock,
        limits=SHORT,
    )
    lock = engine.lock(SCOPE)
    lock.acquire()
    try:
        api.down_for(0)
        deadline = rig.world.clock.monotonic() + SHORT.deadline_s
        settled = validator.settle(SCOPE, [deployment("frontend")], lock, deadline)
    finally:
        lock.release()
    assert not settled.converged and settled.pending == ("frontend",)


def test_undo_while_the_api_is_down_fails_and_loses_no_entry(rig: Rig) -> None:
    engine, api, metrics = blind_engine(rig, replace(SHORT, deadline_s=600))
    outcome = engine.run(scale_frontend())
    assert outcome.kind is OutcomeKind.COMMITTED, outcome.reason
    api.down_for(0)
    failed = Undoer(engine).undo(outcome.transaction_id, actor="U0ALICE")
    assert failed.status is UndoStatus.FAILED
    assert rig.ledger.transaction(outcome.transaction_id).status is TransactionStatus.COMMITTED
    assert [e.state for e in rig.ledger.stack(outcome.transaction_id)] == [UndoState.APPLIED]
    api.end()

    metrics.down_for(0)  # the restore works; only the figure after it is unknown
    done = Undoer(engine).undo(outcome.transaction_id, actor="U0ALICE")
    assert done.status is UndoStatus.UNDONE
    assert done.mu_after is None and "μ now unknown (cannot measure metrics: alerts" in done.message
    tx = rig.ledger.transaction(outcome.transaction_id)
    assert tx.status is TransactionStatus.UNDONE and tx.mu_after is None
    assert replicas(rig) == 2
