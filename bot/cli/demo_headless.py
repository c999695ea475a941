"""The headless demo: one scenario to its end on a stepped lab, auto-approved, with a JSON
summary — the same run the benchmark scores for the `stratus` agent, plus an optional undo of
the committed change at the end."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from agents.model import TransactionId, TransactionStatus
from lab.bench import AGENTS, BenchConfig, LoadedScenario
from lab.bench.facts import DiagnosisFacts, IncidentFacts, RunFacts, TransactionFacts
from lab.bench.runner import Runner
from lab.bench.scenario import GroundTruthSpec
from lab.bench.session import Session

#: Lab seconds between an undo and the μ the summary reports for it.
UNDO_SETTLE_S = 60.0


def _since(first: float | None, at: float | None) -> float | None:
    if first is None or at is None:
        return None
    return round(max(0.0, at - first), 1)


def _outcome(incident: IncidentFacts | None) -> str:
    if incident is None:
        return "no-incident"
    if incident.resolved:
        return "resolved"
    if incident.escalated:
        return "escalated"
    return incident.state


def run_headless(loaded: LoadedScenario, *, seed: int, undo: bool) -> dict[str, Any]:
    config = BenchConfig(seed=seed)
    with (
        tempfile.TemporaryDirectory(prefix="stratus-demo-") as tmp,
        Session.open(
            app=loaded.scenario.app, agent=AGENTS["stratus"], config=config, workdir=Path(tmp)
        ) as session,
    ):
        facts = Runner(session, loaded, config).run()
        summary = summarize(loaded, facts)
        tx = summary["transaction"]
        if undo and tx is not None and tx["status"] == TransactionStatus.COMMITTED.value:
            result = session.brain.undoer.undo(TransactionId(tx["id"]), actor="demo")
            # The undo measures μ the instant it has written. On the stepped lab no time has
            # passed then, so the restored fault has had no effect yet (μ 0.0, where the live
            # demo, whose clock runs on, showed the fault's μ again). Let lab time pass as the
            # live demo would before saying what the undo left.
            session.world.advance(UNDO_SETTLE_S)
            settled = session.brain.engine.measure(session.scope)
            summary["undo"] = {
                "status": result.status.value,
                "message": result.message,
                "restored": result.restored,
                "mu_after": settled.mu,
                "mu_after_s": UNDO_SETTLE_S,
            }
        return summary


def _diagnosis(diagnosis: DiagnosisFacts | None) -> dict[str, Any]:
    top = diagnosis.hypotheses[0] if diagnosis and diagnosis.hypotheses else None
    return {
        "root_cause_service": top.service if top else None,
        "category": top.category if top else None,
        "confidence": top.confidence if top else None,
        "reasoner": diagnosis.reasoner if diagnosis else None,
    }


def _transaction(tx: TransactionFacts | None) -> dict[str, Any] | None:
    if not tx:
        return None
    return {
        "id": tx.id,
        "status": tx.status,
        "mu_before": tx.mu_before,
        "mu_after": tx.mu_after,
        "restored": tx.restored,
    }


def _timings(
    facts: RunFacts,
    opened: IncidentFacts | None,
    diagnosis: DiagnosisFacts | None,
    transactions: list[TransactionFacts],
) -> dict[str, float | None]:
    """Seconds from the first fault to detection, diagnosis and mitigation (the last commit)."""
    committed = [t for t in transactions if t.status == "committed"]
    first = facts.first_fault_s
    mitigated_at = committed[-1].ended_s if committed else None
    return {
        "detect_s": _since(first, opened.opened_s if opened else None),
        "diagnose_s": _since(first, diagnosis.at_s if diagnosis else None),
        "mitigate_s": _since(first, mitigated_at),
    }


def summarize(loaded: LoadedScenario, facts: RunFacts) -> dict[str, Any]:
    """The run in the demo's terms. A run can hold more than one incident (a second fault
    found after the first incident closed): the first one says when the trouble was detected
    and diagnosed, the last one how the run ended."""
    opened = facts.incidents[0] if facts.incidents else None
    incident = facts.incidents[-1] if facts.incidents else None
    diagnosis = opened.diagnoses[0] if opened and opened.diagnoses else None
    transactions = [t for i in facts.incidents for t in i.transactions]
    tx = transactions[-1] if transactions else None
    return {
        "scenario": loaded.scenario.id,
        "app": loaded.scenario.app,
        "expect": loaded.expect.value,
        "incident_id": opened.id if opened else None,
        "incidents": [{"id": i.id, "outcome": _outcome(i)} for i in facts.incidents],
        "diagnosis": _diagnosis(diagnosis),
        # Every action of every transaction the run made, in order.
        "plan": {"actions": [a for t in transactions for a in t.actions]},
        "transaction": _transaction(tx),
        "attempts": len(transactions),
        "undo": None,
        "outcome": _outcome(incident),
        "mitigated": not facts.final_problems,
        "problems": list(facts.final_problems),
        "timings": _timings(facts, opened, diagnosis, transactions),
        "ground_truth": _ground_truth(loaded.scenario.ground_truth),
    }


def _ground_truth(truth: GroundTruthSpec | None) -> dict[str, Any] | None:
    if truth is None:
        return None
    return {"root_causes": list(truth.root_causes), "category": truth.category}
