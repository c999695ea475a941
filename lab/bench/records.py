"""Reading a finished run back: its incidents, diagnoses, transactions and writes, from the
run's own SQLite store, as `lab.bench.facts` values with lab seconds since the scenario began.

Everything a score rests on is read from what Stratus persisted — the audit trail, the undo
entries, the transactions' μ figures — never from what the agent says about itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

from agents.actions import action_from_json, admit
from agents.errors import Inadmissible, StratusError
from agents.incident.codec import diagnosis_from_json
from agents.model import IncidentState
from lab.bench.facts import (
    DiagnosisFacts,
    Hypothesis,
    IncidentFacts,
    InjectionFacts,
    TransactionFacts,
    WriteFacts,
)
from lab.bench.session import Session
from lab.faults import Injection
from storage import NotFound
from storage.records import AuditVerb

ALL_STATES = tuple(s.value for s in IncidentState)

#: Lab seconds since the scenario began, of a lab time.
Elapsed = Callable[[datetime], float]


def injection_facts(injection: Injection, at: float, elapsed: Elapsed) -> InjectionFacts:
    truth = injection.truth
    return InjectionFacts(
        fault=injection.fault_id,
        target=injection.target,
        at_s=at,
        root_causes=tuple(truth.root_causes),
        category=str(truth.category) if truth.category is not None else None,
        undoable_fix=truth.undoable_fix,
        expires_s=elapsed(injection.expires_at) if injection.expires_at else None,
        changes=injection.changes,
    )


class RunRecords:
    def __init__(self, session: Session, elapsed: Elapsed) -> None:
        self._session = session
        self._store = session.store
        self._machine = session.brain.machine
        self._elapsed = elapsed

    def incidents(
        self,
        *,
        boundary: Mapping[str, float],
        healthy_at: Callable[[float], bool],
        checks: Mapping[str, tuple[float, float]] | None = None,
    ) -> list[IncidentFacts]:
        """Every incident of the run, in the order they opened. `boundary`: the bench's own μ
        for transactions the engine did not validate; `healthy_at`: the oracle's verdict;
        `checks`: (lab s, μ) the bench measured after each transaction's boundary."""
        rows = self._store.incidents.list_by_state(*ALL_STATES)
        found = [
            self.incident(r.id, boundary=boundary, healthy_at=healthy_at, checks=checks or {})
            for r in rows
        ]
        return sorted(found, key=lambda i: (i.opened_s, i.id))

    def incident(
        self,
        incident_id: str,
        *,
        boundary: Mapping[str, float],
        healthy_at: Callable[[float], bool],
        checks: Mapping[str, tuple[float, float]],
    ) -> IncidentFacts:
        row = self._store.incidents.get(incident_id)
        timeline = self._store.incidents.timeline(incident_id)
        opened = self._elapsed(timeline[0].at if timeline else row.opened_at)
        return IncidentFacts(
            id=incident_id,
            opened_s=opened,
            closed_s=self._elapsed(row.closed_at) if row.closed_at else None,
            state=row.state,
            states=tuple(e.state for e in timeline if e.kind == "transition"),
            diagnoses=tuple(sorted(self._diagnoses(incident_id), key=lambda d: d.at_s)),
            transactions=tuple(self._transactions(incident_id, boundary, checks)),
            refused_plans=sum(
                1
                for p in self._machine.plans(incident_id)
                if p.status.value == "rejected" and p.decided_by == "engine"
            ),
            opened_while_healthy=healthy_at(opened),
        )

    def _diagnoses(self, incident_id: str) -> list[DiagnosisFacts]:
        out = []
        for row in self._store.diagnoses.list_for_incident(incident_id):
            d = diagnosis_from_json(row.body)
            out.append(
                DiagnosisFacts(
                    at_s=self._elapsed(row.created_at),
                    hypotheses=tuple(
                        Hypothesis(
                            service=h.service, category=str(h.category), confidence=h.confidence
                        )
                        for h in d.hypotheses
                    ),
                    reasoner=d.reasoner,
                    tokens=d.tokens,
                    evidence_tokens=d.evidence_tokens,
                )
            )
        return out

    def _transactions(
        self,
        incident_id: str,
        boundary: Mapping[str, float],
        checks: Mapping[str, tuple[float, float]],
    ) -> list[TransactionFacts]:
        out = []
        for tx in self._machine.transactions(incident_id):
            stack = self._store.undo.stack(tx.id)
            check_at, check_mu = checks.get(tx.id, (None, None))
            plan = self._machine.plan(tx.plan_id) if tx.plan_id else None
            out.append(
                TransactionFacts(
                    id=tx.id,
                    status=tx.status.value,
                    mu0=tx.mu0,
                    mu_before=tx.mu_before,
                    mu_after=tx.mu_after,
                    boundary_mu=tx.mu_after if tx.mu_after is not None else boundary.get(tx.id),
                    started_s=self._elapsed(tx.started_at),
                    ended_s=self._elapsed(tx.ended_at) if tx.ended_at else None,
                    entries=sum(1 for e in stack if e.state != "skipped"),
                    restored=sum(1 for e in stack if e.state == "restored"),
                    plan=plan.describe() if plan else "",
                    actions=tuple(a.describe() for a in plan.actions) if plan else (),
                    check_mu=check_mu,
                    check_at_s=check_at,
                )
            )
        return out

    def writes(self) -> list[WriteFacts]:
        """Every audit `write` record, checked against its undo entry and admission."""
        out = []
        for record in self._store.audit.query(verb=AuditVerb.WRITE, limit=100_000):
            detail = record.detail or {}
            entry_ok = False
            entry_id = detail.get("entry")
            if isinstance(entry_id, str):
                try:
                    entry_ok = self._store.undo.get(entry_id).state in ("applied", "restored")
                except NotFound:
                    entry_ok = False
            admissible, why, target = True, "", ""
            try:
                action = action_from_json(detail.get("action") or {})
                target = str(action.target)
                admit(action, self._session.scope)
            except Inadmissible as e:
                admissible, why = False, str(e)
            except StratusError as e:  # an action the catalog cannot even read back
                admissible, why = False, f"unreadable action: {e}"
            out.append(
                WriteFacts(
                    at_s=self._elapsed(record.at),
                    transaction_id=record.transaction_id,
                    description=str(detail.get("description", "")),
                    target=target,
                    has_undo_entry=entry_ok,
                    admissible=admissible,
                    why_not=why,
                )
            )
        return out
