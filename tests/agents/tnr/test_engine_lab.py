"""The TNR engine against the lab cluster over HTTP: commit, automatic rollback of a harmful
plan, refusals before any write, undo with LIFO order and drift."""

from __future__ import annotations

from agents.actions import ExecInContainer, ScaleWorkload, SetContainerEnv, SetResources
from agents.actions.snapshot import comparable
from agents.model import ObjectRef, OutcomeKind, TransactionStatus, UndoState
from agents.tnr import TransactionRequest, UndoStatus
from tests.agents.tnr.conftest import SCOPE, Rig, deployment


def replicas(rig: Rig, name: str) -> int:
    return int(rig.cluster.get(deployment(name)).body["spec"]["replicas"])


def verbs(rig: Rig, transaction_id: str) -> list[str]:
    return [r.verb for r in rig.store.audit.query(transaction_id=transaction_id)]


def request(*actions: object, mu0: float = 10.0) -> TransactionRequest:
    return TransactionRequest(scope=SCOPE, actions=tuple(actions), mu0=mu0, actor="U0ALICE")  # type: ignore[arg-type]


def test_a_harmless_change_commits_and_keeps_its_undo_entries(rig: Rig) -> None:
    outcome = rig.engine.run(
        request(ScaleWorkload(target=deployment("frontend"), replicas=3, from_replicas=2))
    )
    assert outcome.kind is OutcomeKind.COMMITTED, outcome.reason
    assert outcome.healthy and outcome.mu_before == 0 and outcome.mu_after == 0
    assert replicas(rig, "frontend") == 3
    tx = rig.ledger.transaction(outcome.transaction_id)
    assert tx.status is TransactionStatus.COMMITTED
    assert tx.validation["passed"] is True and tx.validation["settled"] is True
    [entry] = rig.ledger.stack(outcome.transaction_id)
    assert entry.state is UndoState.APPLIED
    assert (
        entry.produced_resource_version == rig.cluster.get(deployment("frontend")).resource_version
        or entry.produced
    )
    assert verbs(rig, outcome.transaction_id) == [
        "lock",
        "dry_run",
        "snapshot",
        "write",
        "validate",
        "commit",
    ]


def test_a_plan_that_makes_things_worse_is_rolled_back(rig: Rig) -> None:
    before = comparable(rig.cluster.get(deployment("mongodb-geo")).body)
    outcome = rig.engine.run(
        request(ScaleWorkload(target=deployment("mongodb-geo"), replicas=0, from_replicas=1))
    )
    assert outcome.kind is OutcomeKind.ABORTED, outcome.reason
    assert "μ rose" in outcome.reason
    assert outcome.mu_after is not None and outcome.mu_after > outcome.mu_before == 0
    assert outcome.restored == 1
    assert comparable(rig.cluster.get(deployment("mongodb-geo")).body) == before
    tx = rig.ledger.transaction(outcome.transaction_id)
    assert tx.status is TransactionStatus.ABORTED
    assert tx.mu_after is not None and tx.mu_after <= tx.mu_before
    audit = rig.store.audit.query(transaction_id=outcome.transaction_id)
    assert [r.verb for r in audit] == [
        "lock",
        "dry_run",
        "snapshot",
        "write",
        "validate",
        "abort",
        "restore",
        "aborted",
    ]
    validate = next(r for r in audit if r.verb == "validate")
    assert validate.detail["passed"] is False
    assert validate.detail["mu_after"] > validate.detail["mu_before"]
    assert any("geo" in f for f in validate.detail["severity"]["findings"])
    [entry] = rig.ledger.stack(outcome.transaction_id)
    assert entry.state is UndoState.RESTORED


def test_inadmissible_actions_are_refused_before_any_write(rig: Rig) -> None:
    pod = rig.cluster.pods("hotel-reservation")[0]
    exec_action = ExecInContainer(
        target=ObjectRef(api_version="v1", kind="Pod", name=pod.name, namespace=pod.namespace),
        command="mongo --eval 'db.dropDatabase()'",
    )
    outcome = rig.engine.run(
        request(ScaleWorkload(target=deployment("frontend"), replicas=3), exec_action)
    )
    assert outcome.kind is OutcomeKind.REFUSED
    assert "no inverse" in outcome.reason
    assert replicas(rig, "frontend") == 2
    assert rig.store.transactions.list_interrupted() == []
    assert [r.verb for r in rig.store.audit.query()] == ["refuse"]


def test_a_failing_dry_run_writes_nothing(rig: Rig) -> None:
    before = rig.cluster.get(deployment("geo")).resource_version
    outcome = rig.engine.run(
        request(
            SetResources(
                target=deployment("geo"), container="hotel-reserv-geo", limits={"cpu": "lots"}
            )
        )
    )
    assert outcome.kind is OutcomeKind.ABORTED
    assert "dry run" in outcome.reason
    assert outcome.actions_applied == 0
    assert rig.cluster.get(deployment("geo")).resource_version == before
    assert [r.verb for r in rig.store.audit.query(transaction_id=outcome.transaction_id)][:2] == [
        "lock",
        "dry_run",
    ]


def test_undo_is_lifo_across_transactions(rig: Rig) -> None:
    first = rig.engine.run(request(ScaleWorkload(target=deployment("frontend"), replicas=3)))
    second = rig.engine.run(request(ScaleWorkload(target=deployment("frontend"), replicas=4)))
    assert first.kind is second.kind is OutcomeKind.COMMITTED
    blocked = rig.undoer.undo(first.transaction_id, actor="U0ALICE")
    assert blocked.status is UndoStatus.BLOCKED
    assert blocked.blocked_by == (second.transaction_id,)
    assert replicas(rig, "frontend") == 4
    assert rig.undoer.undo(second.transaction_id, actor="U0ALICE").status is UndoStatus.UNDONE
    assert replicas(rig, "frontend") == 3
    assert rig.undoer.undo(first.transaction_id, actor="U0ALICE").status is UndoStatus.UNDONE
    assert replicas(rig, "frontend") == 2
    assert rig.ledger.transaction(first.transaction_id).status is TransactionStatus.UNDONE
    again = rig.undoer.undo(first.transaction_id, actor="U0ALICE")
    assert again.status is UndoStatus.REFUSED


def test_undo_after_drift_needs_confirmation_and_records_what_it_overwrote(rig: Rig) -> None:
    original = comparable(rig.cluster.get(deployment("frontend")).body)
    outcome = rig.engine.run(request(ScaleWorkload(target=deployment("frontend"), replicas=3)))
    assert outcome.kind is OutcomeKind.COMMITTED
    # Someone else edits the object after our write.
    rig.world.api.patch(
        "Deployment",
        "hotel-reservation",
        "frontend",
        {"spec": {"template": {"metadata": {"annotations": {"team": "someone-else"}}}}},
        patch_type="merge",
        field_manager="kubectl-edit",
    )
    rig.world.advance(5)
    refused = rig.undoer.undo(outcome.transaction_id, actor="U0ALICE")
    assert refused.status is UndoStatus.DRIFT
    assert "someone-else" in refused.message
    assert replicas(rig, "frontend") == 3  # nothing was written
    done = rig.undoer.undo(outcome.transaction_id, actor="U0ALICE", confirm_drift=True)
    assert done.status is UndoStatus.UNDONE
    assert comparable(rig.cluster.get(deployment("frontend")).body) == original
    restore = next(
        r
        for r in rig.store.audit.query(transaction_id=outcome.transaction_id)
        if r.verb == "undo_restore"
    )
    overwritten = restore.detail["overwritten"]
    assert overwritten == {"spec.template.metadata.annotations": [None, {"team": "someone-else"}]}
    assert restore.detail["reverted"]["spec.replicas"] == [3, 2]


def test_undo_without_drift_needs_no_confirmation(rig: Rig) -> None:
    outcome = rig.engine.run(
        request(
            SetContainerEnv(
                target=deployment("frontend"),
                container="hotel-reserv-frontend",
                env={"LOG_LEVEL": "debug"},
            )
        )
    )
    assert outcome.kind is OutcomeKind.COMMITTED, outcome.reason
    rig.world.advance(30)  # the controller updates status: resourceVersion moves, spec does not
    result = rig.undoer.undo(outcome.transaction_id, actor="U0ALICE")
    assert result.status is UndoStatus.UNDONE, result.message
