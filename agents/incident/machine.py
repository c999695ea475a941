"""The incident state machine (DESIGN section 2).

Agents act only inside states — the diagnoser in DIAGNOSING, the planner in PLANNING, the
transaction engine in EXECUTING — and this module, deterministic code, decides every
transition. Each transition is a compare-and-set in storage together with its timeline event,
persisted before it is announced, so two workers cannot both move an incident and a restart
resumes each open incident from exactly where it stood (`advance` is written to be re-run
from any persisted state).

    DETECTED → DIAGNOSING → DIAGNOSED → PLANNING → AWAITING_APPROVAL → EXECUTING → VALIDATING
      → COMMITTED → RESOLVED | PLANNING (better, not healthy: next attempt)
      | ABORTING → PLANNING (attempt + 1) | ESCALATED
      | HELD (the rollback could not finish or be measured) → PLANNING | ESCALATED
    RESOLVED / ESCALATED → CLOSED

Fail closed (DESIGN section 3, rule 8): a transaction that could not measure μ_before did not
start — the incident stays EXECUTING and the plan is tried again on a later advance, without
spending an attempt; a HELD rollback is retried on each advance; and an incident resolves and
closes only on a complete measurement, never while an alert that opened it still fires.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from agents.detection.records import alert_from_record, incident_from_record
from agents.errors import SourcesUnavailable
from agents.incident.codec import (
    diagnosis_from_json,
    diagnosis_record,
    plan_from_record,
    plan_record,
)
from agents.incident.events import (
    Closed,
    Diagnosed,
    Escalated,
    Notifier,
    PlanProposed,
    StateChanged,
    TransactionFinished,
    TransactionProgress,
)
from agents.model import (
    Alert,
    Diagnosis,
    Incident,
    IncidentId,
    IncidentState,
    Outcome,
    OutcomeKind,
    PlanId,
    PlanStatus,
    TransactionId,
    TransactionStatus,
)
from agents.planning.plan import Attempt, CandidatePlan, Escalation, Plan, Planner, Proposal
from agents.policy import NamespacePolicy, Policy
from agents.ports import Clock
from agents.tnr import (
    OpenTransaction,
    Progress,
    TransactionEngine,
    TransactionRequest,
    Undoer,
    recover,
)
from agents.tnr.engine import HELD_MARK, interrupted
from agents.tnr.ledger import StorageLedger
from agents.tnr.records import TransactionRecord
from storage import Store
from storage.records import StoredTimelineEvent

logger = logging.getLogger(__name__)

S = IncidentState

#: States in which `advance` has nothing to do, ever. (AWAITING_APPROVAL is advanced: a
#: decision `Approvals` recorded is taken there, and an expired request planned again.)
WAITING = frozenset({S.CLOSED})
END = frozenset({S.RESOLVED, S.ESCALATED, S.CLOSED})

#: How long a diagnosis waits for the cluster and the metrics to answer (`SourcesUnavailable`)
#: before the incident goes to a person anyway.
BLIND_LIMIT = timedelta(minutes=10)

#: The moves that name the plan the incident is on (`data["plan"]`).
_PLAN_STATES = frozenset({IncidentState.AWAITING_APPROVAL.value, IncidentState.EXECUTING.value})

_OUTCOME_OF_STATUS = {
    TransactionStatus.COMMITTED: OutcomeKind.COMMITTED,
    TransactionStatus.UNDOING: OutcomeKind.COMMITTED,
    TransactionStatus.UNDONE: OutcomeKind.COMMITTED,
    TransactionStatus.ABORTED: OutcomeKind.ABORTED,
    TransactionStatus.ESCALATED: OutcomeKind.ESCALATED,
    TransactionStatus.HELD: OutcomeKind.HELD,
}


class Diagnoses(Protocol):
    def diagnose(self, incident: Incident, alerts: Sequence[Alert]) -> Diagnosis: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Advance:
    """What one `advance` did."""

    incident_id: IncidentId
    before: IncidentState
    after: IncidentState
    #: Nothing to do until later (e.g. the cluster cannot be measured yet): stop driving.
    waiting: bool = False

    @property
    def moved(self) -> bool:
        return self.before is not self.after


def named_plan(store: Store, incident_id: str, states: frozenset[str]) -> Plan | None:
    """The plan the incident's last move into one of `states` named (`data["plan"]`)."""
    for event in reversed(store.incidents.timeline(incident_id)):
        if event.kind == "transition" and event.state in states:
            wanted = (event.data or {}).get("plan")
            return plan_from_record(store.plans.get(str(wanted))) if wanted else None
    return None


def current_plan(store: Store, incident_id: str) -> Plan | None:
    """The plan the incident is on: the one its last move into AWAITING_APPROVAL or
    EXECUTING named, while it is proposed, approved or executed. Not an earlier attempt's
    plan once that one was rejected, expired or superseded."""
    live = (PlanStatus.PROPOSED, PlanStatus.APPROVED, PlanStatus.EXECUTED)
    plan = named_plan(store, incident_id, _PLAN_STATES)
    return plan if plan is not None and plan.status in live else None


class IncidentMachine:
    def __init__(
        self,
        *,
        store: Store,
        diagnoser: Diagnoses,
        planner: Planner,
        engine: TransactionEngine,
        undoer: Undoer,
        policy: Policy,
        clock: Clock,
        notifier: Notifier,
        id_factory: Callable[[], str] | None = None,
    ) -> None:
        self.store = store
        self._diagnoser = diagnoser
        self._planner = planner
        self.engine = engine
        self.undoer = undoer
        self.policy = policy
        self.clock = clock
        self.notifier = notifier
        self._ledger = StorageLedger(store)
        self._running: set[str] = set()
        #: Incidents whose last advance found nothing to do until later (guarded by
        #: `_running_lock`); `drive` stops on them instead of spinning.
        self._waiting: set[str] = set()
        self._running_lock = threading.Lock()
        self._new_id = id_factory or (lambda: uuid.uuid4().hex[:10])

    # ------------------------------------------------------------------------------ reads

    def incident(self, incident_id: str) -> Incident:
        return incident_from_record(self.store.incidents.get(incident_id))

    def plans(self, incident_id: str) -> list[Plan]:
        return [plan_from_record(r) for r in self.store.plans.list_for_incident(incident_id)]

    def plan(self, plan_id: str) -> Plan:
        return plan_from_record(self.store.plans.get(plan_id))

    def diagnosis(self, incident_id: str) -> Diagnosis | None:
        row = self.store.diagnoses.latest(incident_id)
        return diagnosis_from_json(row.body) if row is not None else None

    def stored_diagnosis(self, diagnosis_id: int) -> tuple[Incident, Diagnosis]:
        """One stored diagnosis (a Details button names it) with its incident. Raises
        `storage.NotFound` for an id that is not stored."""
        record = self.store.diagnoses.get(diagnosis_id)
        return self.incident(record.incident_id), diagnosis_from_json(record.body)

    def transactions(self, incident_id: str) -> list[TransactionRecord]:
        return list(self._ledger.for_incident(IncidentId(incident_id)))

    def namespace_policy(self, incident: Incident) -> NamespacePolicy:
        return self.policy.for_namespace(incident.scope.namespace)

    def attempts(self, incident_id: str) -> list[Attempt]:
        """Plans that ran (or that admission refused), with how they ended, oldest first."""
        by_plan = {t.plan_id: t for t in self.transactions(incident_id) if t.plan_id}
        attempts = []
        for plan in self.plans(incident_id):
            tx = by_plan.get(plan.id)
            if tx is not None and interrupted(tx):
                continue  # rolled back unjudged (its writer died): `interruptions` counts it
            if tx is not None and tx.status in _OUTCOME_OF_STATUS:
                kind = _OUTCOME_OF_STATUS[tx.status]
                outcome = Outcome(
                    transaction_id=tx.id,
                    kind=kind,
                    mu_before=tx.mu_before,
                    mu_after=tx.mu_after,
                    healthy=tx.mu_after is not None and tx.mu_after <= 0,
                    reason=tx.reason or "",
                )
                attempts.append(Attempt(plan=plan, outcome=outcome, validation=tx.validation))
            elif plan.status is PlanStatus.REJECTED:
                # Refused by admission (decided_by "engine") or rejected by a person: either
                # way the planner must not propose it again.
                outcome = Outcome(
                    transaction_id=tx.id if tx else TransactionId(""),
                    kind=OutcomeKind.REFUSED,
                    mu_before=0.0,
                    mu_after=None,
                    healthy=False,
                    reason=plan.reject_reason or "refused",
                )
                attempts.append(Attempt(plan=plan, outcome=outcome))
        return attempts

    def interruptions(self, incident_id: str) -> int:
        """Transactions rolled back because their writer stopped before a verdict (a bot
        killed mid-transaction). Each spends an attempt, so a plan that keeps killing its
        writer cannot loop, but refutes nothing: the planner may propose the plan again."""
        return sum(1 for t in self.transactions(incident_id) if interrupted(t))

    # ---------------------------------------------------------------------- transitions

    def move(
        self,
        incident: Incident,
        to: IncidentState,
        message: str,
        *,
        data: dict[str, object] | None = None,
        mu: float | None = None,
        attempt: int | None = None,
    ) -> Incident | None:
        """Compare-and-set from the incident's current state; announce only after it is
        persisted. None when another worker moved it first."""
        moved = self.store.incidents.transition(
            incident.id,
            to.value,
            at=self.clock.now(),
            message=message,
            expected=incident.state.value,
            data=dict(data or {}),
            mu=mu,
            attempt=attempt,
        )
        if not moved:
            return None
        after = self.incident(incident.id)
        logger.info("incident %s: %s → %s: %s", incident.id, incident.state, to, message)
        self.notifier.notify(StateChanged(incident=after, previous=incident.state, message=message))
        return after

    def advance(self, incident_id: str) -> Advance:
        """Do the work of the incident's current state and take the transition it leads to."""
        incident = self.incident(incident_id)
        handler = {
            S.DETECTED: self._detected,
            S.DIAGNOSING: self._diagnosing,
            S.DIAGNOSED: self._diagnosed,
            S.PLANNING: self._planning,
            S.AWAITING_APPROVAL: self._awaiting,
            S.EXECUTING: self._executing,
            S.VALIDATING: self._executing,
            S.ABORTING: self._executing,
            S.COMMITTED: self._committed,
            S.HELD: self._held,
            S.RESOLVED: self._close,
            S.ESCALATED: self._close,
            S.CLOSED: _nothing,
        }[incident.state]
        with self._running_lock:
            self._waiting.discard(incident.id)
        handler(incident)
        after = self.incident(incident_id).state
        with self._running_lock:
            waiting = incident.id in self._waiting
        return Advance(incident_id=incident.id, before=incident.state, after=after, waiting=waiting)

    def drive(self, incident_id: str, *, max_steps: int = 64) -> IncidentState:
        """Advance until the incident waits for a person or is closed."""
        state = self.incident(incident_id).state
        for _ in range(max_steps):
            if state in WAITING:
                return state
            step = self.advance(incident_id)
            state = step.after
            if step.waiting:
                return state
            if not step.moved and state not in (S.EXECUTING, S.VALIDATING, S.ABORTING):
                return state
        return state

    # -------------------------------------------------------------------------- states

    def _detected(self, incident: Incident) -> None:
        self.move(incident, S.DIAGNOSING, "Collecting evidence")

    def _diagnose(self, incident: Incident) -> Diagnosis:
        alerts = [alert_from_record(r) for r in self.store.incidents.alerts(incident.id)]
        diagnosis = self._diagnoser.diagnose(incident, alerts)
        diagnosis = replace(diagnosis, created_at=self.clock.now())
        self.store.diagnoses.add(diagnosis_record(diagnosis, self.clock.now()))
        return diagnosis

    def _diagnose_or_wait(self, incident: Incident) -> Diagnosis | None:
        """A diagnosis, or None when the sources it stands on did not answer: the incident
        waits in its state and is diagnosed again on its next drive."""
        try:
            return self._diagnose(incident)
        except SourcesUnavailable as e:
            self._blind(incident, str(e))
            return None

    def _blind(self, incident: Incident, reason: str) -> None:
        """Note the wait once per blind spell (the spell ends with the next transition); after
        `BLIND_LIMIT` of it, escalate: a person can see what Stratus cannot."""
        with self._running_lock:
            self._waiting.add(incident.id)
        now = self.clock.now()
        since: datetime | None = None
        for event in reversed(self.store.incidents.timeline(incident.id)):
            if event.kind == "transition":
                break
            if (event.data or {}).get("blind_since"):
                since = datetime.fromisoformat(str(event.data["blind_since"]))
                break
        if since is None:
            self._note(
                incident,
                f"Waiting: cannot see the cluster ({reason}); nothing is concluded "
                "from an outage, diagnosing again when it answers",
                {"blind_since": now.isoformat(), "reason": reason},
                at=now,
            )
            return
        if now - since >= BLIND_LIMIT:
            minutes = int((now - since).total_seconds() // 60)
            self._escalate(
                incident,
                Escalation(
                    reason=f"the cluster or the metrics did not answer for {minutes} min, so "
                    "no diagnosis could be made",
                    runbook=f"Last error: {reason}. Check the API server and Prometheus; "
                    "`/stratus diagnose` re-reads the cluster.",
                ),
            )

    def _diagnosing(self, incident: Incident) -> None:
        diagnosis = self._diagnose_or_wait(incident)
        if diagnosis is None:
            return
        top = diagnosis.top
        after = self.move(
            incident,
            S.DIAGNOSED,
            f"Root cause: {top.service} ({top.category}, confidence {top.confidence:.0%})",
            data={
                "service": top.service,
                "category": str(top.category),
                "reasoner": diagnosis.reasoner,
            },
        )
        if after is not None:
            self.notifier.notify(Diagnosed(incident=after, diagnosis=diagnosis))

    def _diagnosed(self, incident: Incident) -> None:
        self.move(incident, S.PLANNING, "Planning a mitigation")

    def _planning(self, incident: Incident) -> None:
        policy = self.namespace_policy(incident)
        attempts = self.attempts(incident.id)
        ran = [a for a in attempts if a.outcome.kind is not OutcomeKind.REFUSED]
        if self._resolved_when_healthy(incident, ran):
            return
        cut_short = self.interruptions(incident.id)
        if self._out_of_attempts(incident, policy, attempts, cut_short=cut_short):
            return
        diagnosis = self.diagnosis(incident.id)
        if diagnosis is None or attempts or cut_short:
            # After an attempt the cluster has moved on: look again before planning again.
            diagnosis = self._diagnose_or_wait(incident)
            if diagnosis is None:
                return
        proposal = self._planner.plan(incident, diagnosis, attempts, now=self.clock.now())
        if self._nothing_proposed(incident, proposal, diagnosis):
            return
        chosen, alternatives, errors = self._first_admissible(incident, proposal.candidates)
        if chosen is None:
            self._escalate(
                incident,
                Escalation(
                    reason="every candidate plan was refused by admission or its dry run",
                    runbook="\n".join(f"- {e}" for e in errors),
                ),
            )
            return
        now = self.clock.now()
        plans = self._ranked_plans(
            incident,
            proposal,
            [chosen, *[(a, ()) for a in alternatives]],
            attempt=len(ran) + cut_short + 1,
            now=now,
            expires=now + timedelta(seconds=policy.approval_ttl_s),
        )
        self.store.plans.create_many([plan_record(p) for p in plans])
        self._submit(incident, policy, proposal, plans, now=now)

    def _nothing_proposed(
        self, incident: Incident, proposal: Proposal, diagnosis: Diagnosis
    ) -> bool:
        """Escalate when the planner escalates or finds no candidate."""
        if proposal.escalation is None and proposal.candidates:
            return False
        self._escalate(
            incident,
            proposal.escalation
            or Escalation(
                reason="no admissible plan for this diagnosis", runbook=diagnosis.summary
            ),
        )
        return True

    def _out_of_attempts(
        self,
        incident: Incident,
        policy: NamespacePolicy,
        attempts: Sequence[Attempt],
        *,
        cut_short: int,
    ) -> bool:
        """Escalate once the namespace's attempts are spent: every plan that ran (admission's
        refusals do not count) and every transaction cut short by a dead writer."""
        ran = [a for a in attempts if a.outcome.kind is not OutcomeKind.REFUSED]
        if len(ran) + cut_short < policy.attempts:
            return False
        lost = f" ({cut_short} more cut short when the bot stopped)" if cut_short else ""
        self._escalate(
            incident,
            Escalation(
                reason=f"{len(ran)} attempt(s) did not make the scope healthy{lost}",
                runbook=_attempts_runbook(attempts),
            ),
        )
        return True

    def _resolved_when_healthy(self, incident: Incident, ran: Sequence[Attempt]) -> bool:
        """Nothing to fix is the best plan: a scope that is healthy now (a fix that took effect
        after its sustain window, or a blip that passed) gets no further writes."""
        severity = self.engine.measure(incident.scope)
        if not severity.healthy:  # healthy implies a complete measurement
            return False
        if ran:
            text = "Healthy now (after the last transaction): nothing to change"
        else:
            # Transient: the symptoms cleared before any change, so no plan is made.
            text = (
                "Transient: symptoms cleared before any change (μ was "
                f"{incident.mu0:g} at detection, now 0, fully measured: no firing alert "
                "in scope, SLOs met, no replica lost); no plan made"
            )
        self.move(incident, S.RESOLVED, text, mu=0.0)
        return True

    def _ranked_plans(
        self,
        incident: Incident,
        proposal: Proposal,
        ranked: Sequence[tuple[CandidatePlan, tuple[str, ...]]],
        *,
        attempt: int,
        now: datetime,
        expires: datetime,
    ) -> list[Plan]:
        """The chosen candidate (rank 0, proposed, with its dry-run diffs and an approval
        deadline) followed by the alternatives as superseded plans."""
        return [
            Plan(
                id=PlanId(f"plan-{self._new_id()}"),
                incident_id=incident.id,
                attempt=attempt,
                rank=rank,
                actions=candidate.actions,
                rationale=candidate.rationale,
                hypothesis=candidate.hypothesis,
                status=PlanStatus.PROPOSED if rank == 0 else PlanStatus.SUPERSEDED,
                created_at=now,
                expires_at=expires if rank == 0 else None,
                diffs=diffs if rank == 0 else (),
                reflection=proposal.reflection,
                suggestions=candidate.suggestions,
                held=candidate.held,
            )
            for rank, (candidate, diffs) in enumerate(ranked)
        ]

    def _submit(
        self,
        incident: Incident,
        policy: NamespacePolicy,
        proposal: Proposal,
        plans: Sequence[Plan],
        *,
        now: datetime,
    ) -> None:
        """Hand the stored plan on: to a person (observe-only), to the engine (policy allows
        it unattended) or to the approvers."""
        plan = plans[0]
        if not policy.may_act:
            self._escalate(
                incident,
                Escalation(
                    reason=f"namespace {incident.scope.namespace} is observe-only; a person acts",
                    runbook=f"Suggested plan: {plan.describe()}\n\n{plan.rationale}",
                ),
            )
            return
        # A plan with a value only a reasoner named, a tie or a weak hypothesis waits for a
        # person at every autonomy level (DESIGN section 3 rules 9 and 10).
        if policy.runs_without_approval(plan.risk) and plan.runs_unattended:
            self._run_unattended(incident, policy, proposal, plan, now=now)
            return
        self._await_approval(incident, proposal, plan)

    def _run_unattended(
        self,
        incident: Incident,
        policy: NamespacePolicy,
        proposal: Proposal,
        plan: Plan,
        *,
        now: datetime,
    ) -> None:
        self.store.plans.set_status(
            plan.id,
            PlanStatus.APPROVED.value,
            expected=PlanStatus.PROPOSED.value,
            decided_at=now,
            decided_by=f"policy:{policy.autonomy}",
        )
        after = self.move(
            incident,
            S.EXECUTING,
            f"Executing without approval ({policy.autonomy}, {plan.risk} risk): {plan.describe()}",
            data={"plan": plan.id, "refused": list(proposal.refused)},
        )
        if after is not None:
            self.notifier.notify(PlanProposed(incident=after, plan=plan))

    def _await_approval(
        self,
        incident: Incident,
        proposal: Proposal,
        plan: Plan,
    ) -> None:
        after = self.move(
            incident,
            S.AWAITING_APPROVAL,
            f"Plan waiting for approval ({plan.risk} risk): {plan.describe()}",
            data={
                "plan": plan.id,
                "hash": plan.content_hash,
                "refused": list(proposal.refused),
                "held": list(plan.held),
            },
        )
        if after is not None:
            self.notifier.notify(PlanProposed(incident=after, plan=plan))

    def _first_admissible(
        self, incident: Incident, candidates: Sequence[CandidatePlan]
    ) -> tuple[tuple[CandidatePlan, tuple[str, ...]] | None, list[CandidatePlan], list[str]]:
        """The best candidate whose every action passes admission and a dry run."""
        errors: list[str] = []
        for index, candidate in enumerate(candidates):
            previews = self.engine.preview(incident.scope, candidate.actions)
            refused = [p for p in previews if not p.admitted]
            if not refused:
                rest = [c for i, c in enumerate(candidates) if i != index]
                return (candidate, tuple(p.diff for p in previews)), rest, errors
            errors.extend(f"{p.action.describe()}: {p.error}" for p in refused)
        return None, [], errors

    def _awaiting(self, incident: Incident) -> None:
        """Take the decision people made on the plan (`Approvals` only records it): approved,
        the incident goes to EXECUTING; rejected, back to PLANNING with the attempt spent.
        Undecided past its expiry, the request lapses and the incident plans again."""
        awaited = self._awaited(incident)
        if awaited is not None and awaited.status is PlanStatus.APPROVED:
            self.move(
                incident,
                S.EXECUTING,
                f"Approved by {awaited.decided_by}: {awaited.describe()}",
                data={"plan": awaited.id},
            )
            return
        if awaited is not None and awaited.status is PlanStatus.REJECTED:
            # A rejected plan counts as tried: the planner proposes something else next time,
            # and a person who wants to act themselves can escalate by rejecting every option.
            self.move(
                incident,
                S.PLANNING,
                f"Rejected by {awaited.decided_by}: {awaited.reject_reason}",
                attempt=incident.attempt + 1,
                data={"plan": awaited.id, "reason": awaited.reject_reason},
            )
            return
        plan = awaited
        if plan is None or plan.expires_at is None or self.clock.now() < plan.expires_at:
            return
        if self.store.plans.set_status(
            plan.id, PlanStatus.EXPIRED.value, expected=PlanStatus.PROPOSED.value
        ):
            self.move(incident, S.PLANNING, f"Approval of {plan.id} expired; proposing again")

    def _awaited(self, incident: Incident) -> Plan | None:
        """The plan the incident was last put to people with: its AWAITING_APPROVAL
        transition names it (the alternatives beside it are SUPERSEDED, never decided)."""
        return self._named(incident, S.AWAITING_APPROVAL)

    def _named(self, incident: Incident, state: S) -> Plan | None:
        """The plan the incident's last transition into `state` named, if any."""
        return named_plan(self.store, incident.id, frozenset({state.value}))

    def decided(self, incident_id: str) -> bool:
        """Whether people decided on the plan an AWAITING_APPROVAL incident waits for, so
        that advancing it moves it (the leader drives what a follower's decision left)."""
        incident = self.incident(incident_id)
        if incident.state is not S.AWAITING_APPROVAL:
            return False
        awaited = self._awaited(incident)
        return awaited is not None and awaited.status in (PlanStatus.APPROVED, PlanStatus.REJECTED)

    def current_plan(self, incident_id: str) -> Plan | None:
        return current_plan(self.store, incident_id)

    def _executing(self, incident: Incident) -> None:
        # Only the plan the move into EXECUTING named, and only once a person or the policy
        # approved it: never a newer PROPOSED plan, nor an earlier attempt's EXECUTED one.
        plan = self._named(incident, S.EXECUTING)
        if plan is None or plan.status not in (PlanStatus.APPROVED, PlanStatus.EXECUTED):
            self.move(incident, S.PLANNING, "No approved plan found; planning again")
            return
        # One executor per plan in this process; the plan's status compare-and-set and the
        # scope's lease keep other workers (and replicas) out.
        with self._running_lock:
            if plan.id in self._running:
                return
            self._running.add(plan.id)
        try:
            self._execute(incident, plan)
        finally:
            with self._running_lock:
                self._running.discard(plan.id)

    def _execute(self, incident: Incident, plan: Plan) -> None:
        tx = next((t for t in self.transactions(incident.id) if t.plan_id == plan.id), None)
        if tx is not None and tx.status in (
            TransactionStatus.OPEN,
            TransactionStatus.VALIDATING,
            TransactionStatus.ABORTING,
        ):
            if self._ledger.lease_holder(tx.scope) is not None:
                return  # a live writer is on it (or a dead one's lease has not run out yet)
            # A crash cut the transaction short: the engine's recovery finishes it first.
            recover(self.engine, self.undoer, only=tx.id)
            tx = self._ledger.transaction(tx.id)
        if tx is not None and tx.status in _OUTCOME_OF_STATUS:
            self._finished(incident, plan, tx)
            return
        if tx is not None:
            return  # still being recovered or run elsewhere
        if not self._claimed(incident, plan):
            return
        request = TransactionRequest(
            scope=incident.scope,
            actions=plan.actions,
            mu0=self.baseline(incident),
            actor=plan.decided_by or "stratus",
            incident_id=incident.id,
            plan_id=plan.id,
        )
        begun = self.engine.begin(request, on_progress=self._progress(incident.id, plan))
        if isinstance(begun, Outcome):
            if begun.kind is OutcomeKind.NOT_STARTED:
                self._not_started(incident, plan, begun)
            else:
                self._refused(incident, plan, begun)
            return
        with begun:
            outcome = self._transact(incident, begun)
        tx = self._ledger.transaction(outcome.transaction_id)
        self._finished(self.incident(incident.id), plan, tx)

    def _transact(self, incident: Incident, tx: OpenTransaction) -> Outcome:
        """The transaction's phases, each from the state that names it: the writes in
        EXECUTING, the measurement in VALIDATING, the rollback in ABORTING."""
        failed = tx.apply()
        mu_after: float | None = None
        if failed is None:
            if tx.validates:
                incident = self.move(incident, S.VALIDATING, "All writes done; validating") or (
                    incident
                )
            checked = tx.validate()
            if checked.commit:
                return tx.commit(checked)
            failed, mu_after = checked.reason, checked.mu_after
        if tx.rolls_back:
            self.move(incident, S.ABORTING, f"Rolling back: {failed}")
        return tx.abort(failed, mu_after=mu_after)

    def _claimed(self, incident: Incident, plan: Plan) -> bool:
        """Whether this worker may open the plan's transaction."""
        if plan.status is PlanStatus.APPROVED and not self.store.plans.set_status(
            plan.id, PlanStatus.EXECUTED.value, expected=PlanStatus.APPROVED.value
        ):
            return False  # another worker took it
        # Not if marked executed by a worker that is about to open its transaction.
        return not (
            plan.status is PlanStatus.EXECUTED and self._ledger.lease_holder(incident.scope)
        )

    def _refused(self, incident: Incident, plan: Plan, outcome: Outcome) -> None:
        """The engine refused the plan before any write: reject it and plan again."""
        self.store.plans.set_status(
            plan.id,
            PlanStatus.REJECTED.value,
            decided_by="engine",
            decided_at=self.clock.now(),
            reject_reason=outcome.reason,
        )
        current = self.incident(incident.id)
        self.move(
            current,
            S.PLANNING,
            f"Refused before any write: {outcome.reason}",
            attempt=current.attempt + 1,
        )

    def _not_started(self, incident: Incident, plan: Plan, outcome: Outcome) -> None:
        """μ_before could not be measured: nothing was written and no attempt was spent. The
        plan stays EXECUTED with no transaction, so a later advance runs it again; the
        timeline says why (once per blind spell, not on every retry)."""
        with self._running_lock:
            self._waiting.add(incident.id)
        timeline = self.store.incidents.timeline(incident.id)
        last = timeline[-1] if timeline else None
        if last is not None and (last.data or {}).get("not_started") == plan.id:
            return
        self._note(
            incident,
            f"Waiting: {outcome.reason}; nothing was written, trying again later",
            {"not_started": plan.id, "reason": outcome.reason},
        )
        self.notifier.notify(
            TransactionFinished(incident=self.incident(incident.id), plan=plan, outcome=outcome)
        )

    def baseline(self, incident: Incident) -> float:
        """The μ0 no transaction may end above: the scope's severity as Stratus found it, i.e.
        before its first write. Alerts and metrics lag, so the figure measured at detection is
        often lower than the harm the fault had done by the time anyone could act; taking the
        larger of the two keeps "never worse than we found it" without refusing every partial
        fix of a fault that kept spreading before the first transaction."""
        done = [t for t in self.transactions(incident.id) if t.mu_before is not None]
        found = done[0].mu_before if done else self.engine.measure(incident.scope).mu
        return max(incident.mu0, found)

    def _progress(self, incident_id: str, plan: Plan) -> Callable[[Progress], None]:
        """The engine's steps, for the in-place progress message only: the machine moves the
        incident between phases itself (`_transact`)."""

        def on_progress(progress: Progress) -> None:
            self.notifier.notify(
                TransactionProgress(
                    incident=self.incident(incident_id), plan=plan, progress=progress
                )
            )

        return on_progress

    def _finished(self, incident: Incident, plan: Plan, tx: TransactionRecord) -> None:
        kind = _OUTCOME_OF_STATUS[tx.status]
        healthy = tx.mu_after is not None and tx.mu_after <= 0
        outcome = Outcome(
            transaction_id=tx.id,
            kind=kind,
            mu_before=tx.mu_before,
            mu_after=tx.mu_after,
            healthy=healthy,
            reason=tx.reason or "",
        )
        data = {"transaction": tx.id, "mu_before": tx.mu_before, "mu_after": tx.mu_after}
        if kind is OutcomeKind.COMMITTED:
            after = self.move(
                incident, S.COMMITTED, f"Committed {tx.id}: {tx.reason}", data=data, mu=tx.mu_after
            )
        elif kind is OutcomeKind.HELD:
            after = self.move(
                incident, S.HELD, f"Held {tx.id}: {_held_part(tx.reason)}", data=data, mu=None
            )
        elif kind is OutcomeKind.ABORTED:
            after = self.move(
                incident,
                S.PLANNING,
                f"Rolled back {tx.id}: {tx.reason}",
                data=data,
                mu=tx.mu_after,
                attempt=incident.attempt + 1,
            )
        else:
            after = self._escalate(
                incident,
                Escalation(
                    reason=f"the rollback of {tx.id} did not restore the scope: {tx.reason}",
                    runbook="Inspect the objects this transaction touched; the audit trail "
                    f"lists every snapshot and restore of {tx.id}.",
                ),
            )
        if after is not None:
            self.notifier.notify(
                TransactionFinished(
                    incident=after, plan=plan, outcome=outcome, validation=dict(tx.validation)
                )
            )

    def _committed(self, incident: Incident) -> None:
        txs = self.transactions(incident.id)
        if self._undone_by_a_person(incident, txs):
            return
        committed = [t for t in txs if t.status is TransactionStatus.COMMITTED]
        last = committed[-1] if committed else None
        if last is None or not _healthy_on_record(last):
            self.move(
                incident,
                S.PLANNING,
                "Better but not healthy: planning the next attempt",
                attempt=incident.attempt + 1,
            )
            return
        # Healthy by the sustain window, which counts only alerts that started after the
        # transaction began. The alerts that opened the incident must have stopped too.
        firing = self.opening_alerts_firing(incident)
        if firing == ():
            self.move(incident, S.RESOLVED, "Healthy after the transaction", mu=last.mu_after)
            return
        ended = last.ended_at or last.started_at
        if self.clock.now() - ended < timedelta(seconds=self.engine.limits.deadline_s):
            # Alert rules lag behind a fix: wait (within Δ) for them to stop.
            with self._running_lock:
                self._waiting.add(incident.id)
            return
        still = "cannot read the alerts" if firing is None else f"{', '.join(firing)} still firing"
        self.move(
            incident,
            S.PLANNING,
            f"Committed {last.id} measured healthy, but {still}: planning the next attempt",
            attempt=incident.attempt + 1,
        )

    def opening_alerts_firing(self, incident: Incident) -> tuple[str, ...] | None:
        """Names of the alerts that opened `incident` and still fire; None when that cannot
        be read (which is not "none"). The metrics source answers; without one there is
        nothing live to ask (the stored rows of scan alerts are not resolved across a restart,
        so they cannot say), and the complete cluster measurement stands alone: ()."""
        opened = [alert_from_record(r) for r in self.store.incidents.alerts(incident.id)]
        if not opened:
            return ()
        live = self.engine.meter.firing_alerts(incident.scope.namespace)
        if live is None:
            return None
        now_firing = {a.fingerprint for a in live} | {(a.name, a.service) for a in live}
        return tuple(
            sorted(
                {
                    a.name
                    for a in opened
                    if a.fingerprint in now_firing or (a.name, a.service) in now_firing
                }
            )
        )

    def _note_once(self, incident: Incident, message: str) -> None:
        """A timeline note that is not a state change, said once per state: not repeated on
        every retry, even when alerts joining the incident come between two retries."""
        timeline = self.store.incidents.timeline(incident.id)
        for event in reversed(timeline):
            if event.message == message and event.kind == "note":
                return
            if event.kind == "transition":
                break
        self._note(incident, message)

    def _note(
        self,
        incident: Incident,
        message: str,
        data: dict[str, object] | None = None,
        *,
        at: datetime | None = None,
    ) -> None:
        """A timeline note: said in the incident's state, not a change of it."""
        self.store.incidents.add_event(
            StoredTimelineEvent(
                incident_id=incident.id,
                at=at or self.clock.now(),
                state=incident.state.value,
                kind="note",
                message=message,
                data=dict(data or {}),
            )
        )

    def _held(self, incident: Incident) -> None:
        """A rollback that could not finish (or be measured): try to finish it now, under
        the writer lock; go on as an abort would once it is done and measured."""
        txs = self.transactions(incident.id)
        held = [t for t in txs if t.status is TransactionStatus.HELD]
        if held:
            tx = held[-1]
            if self._ledger.lease_holder(tx.scope) is not None:
                return  # someone (an Undo press, another worker) is on it
            result = self.undoer.undo(tx.id, actor="stratus")
            tx = self._ledger.transaction(tx.id)
            if tx.status is TransactionStatus.HELD:
                logger.info("incident %s still held: %s", incident.id, result.message)
                with self._running_lock:
                    self._waiting.add(incident.id)
                return
        else:
            finished = [t for t in txs if t.status in _OUTCOME_OF_STATUS]
            if not finished:
                self.move(incident, S.PLANNING, "Nothing held any more; planning again")
                return
            tx = finished[-1]  # finished by the Undo button
        plan = self.plan(tx.plan_id) if tx.plan_id else self.current_plan(incident.id)
        if plan is None:
            self.move(incident, S.PLANNING, f"Rollback of {tx.id} finished; planning again")
            return
        self._finished(incident, plan, tx)

    def _escalate(self, incident: Incident, escalation: Escalation) -> Incident | None:
        after = self.move(
            incident,
            S.ESCALATED,
            f"Escalated: {escalation.reason}",
            data={"reason": escalation.reason, "runbook": escalation.runbook},
        )
        if after is not None:
            self.notifier.notify(Escalated(incident=after, escalation=escalation))
        return after

    def _undone_by_a_person(self, incident: Incident, txs: Sequence[TransactionRecord]) -> bool:
        """A person undid the fix before the incident closed: their call overrides the plan,
        so Stratus does not try another one behind their back. The incident is escalated to
        them (and stays open while its alerts fire)."""
        if not txs or txs[-1].status not in (TransactionStatus.UNDOING, TransactionStatus.UNDONE):
            return False
        self._escalate(
            incident,
            Escalation(
                reason=f"{txs[-1].id} was undone by a person before the incident closed",
                runbook="The fix was undone on purpose. Decide the next step; "
                "`/stratus diagnose` re-reads the cluster.",
            ),
        )
        return True

    def _close(self, incident: Incident) -> None:
        if incident.state is S.RESOLVED and self._undone_by_a_person(
            incident, self.transactions(incident.id)
        ):
            return
        if incident.state in (S.RESOLVED, S.ESCALATED) and self._alerts_keep_open(incident):
            return
        diagnosis = self.diagnosis(incident.id)
        resolution = self._resolution(incident)
        summary = _close_summary(incident, diagnosis, resolution)
        closed = self.store.incidents.close(
            incident.id,
            at=self.clock.now(),
            message=f"Closed ({incident.state.value})",
            summary=summary,
            root_cause_service=diagnosis.root_cause_service if diagnosis else None,
            category=str(diagnosis.category) if diagnosis else None,
            resolution=resolution,
            expected=incident.state.value,
        )
        if closed:
            self.notifier.notify(Closed(incident=self.incident(incident.id), summary=summary))

    def _alerts_keep_open(self, incident: Incident) -> bool:
        firing = self.opening_alerts_firing(incident)
        if firing == ():
            return False
        # Never closed while an alert that opened it fires (or cannot be read): a
        # still-firing alert must land in an open incident, not a closed one. It
        # stays RESOLVED or ESCALATED (open: an escalation is in a person's hands
        # until its alerts stop) and a later advance closes it once they do.
        still = (
            "the alerts that opened it cannot be read"
            if firing is None
            else f"{', '.join(firing)} still firing"
        )
        self._note_once(incident, f"Not closing yet: {still}")
        with self._running_lock:
            self._waiting.add(incident.id)
        return True

    def _resolution(self, incident: Incident) -> str:
        """What fixed it: the committed plans, else why nothing was changed."""
        committed = [
            plan_id
            for plan_id in (
                t.plan_id
                for t in self.transactions(incident.id)
                if t.status is TransactionStatus.COMMITTED
            )
            if plan_id
        ]
        return "; ".join(self.plan(p).describe() for p in committed) or (
            "escalated to a person" if incident.state is S.ESCALATED else "no change needed"
        )


def _close_summary(incident: Incident, diagnosis: Diagnosis | None, resolution: str) -> str:
    return (
        f"{incident.title}: {incident.state.value}. Root cause "
        f"{diagnosis.root_cause_service if diagnosis else 'unknown'} "
        f"({diagnosis.category if diagnosis else 'unknown'}). Resolution: {resolution}."
    )


def _healthy_on_record(tx: TransactionRecord) -> bool:
    """Healthy by a complete validation figure (older records have no `complete`: their
    verdict could not commit on an incomplete one either, so absent means complete)."""
    if tx.mu_after is None or tx.mu_after > 0:
        return False
    severity = tx.validation.get("severity")
    complete = tx.validation.get("complete", True)
    if isinstance(severity, dict) and severity.get("complete") is False:
        return False
    return complete is not False


def _held_part(reason: str | None) -> str:
    text = reason or "held"
    return text.split(HELD_MARK, 1)[1] if HELD_MARK in text else text


def _nothing(_incident: Incident) -> None:
    return None


def _attempts_runbook(attempts: Sequence[Attempt]) -> str:
    lines = ["What was tried (each attempt was validated and rolled back or committed):"]
    for number, attempt in enumerate(attempts, start=1):
        outcome = attempt.outcome
        lines.append(f"{number}. {attempt.plan.describe()} → {outcome.kind}: {outcome.reason}")
    return "\n".join(lines)
