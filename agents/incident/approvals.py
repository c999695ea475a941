"""Approvals, rejections and undo requests: who may do what, decided from the policy.

An approval is bound to the plan's exact contents (its hash) and expires. It is idempotent per
person, and starting the transaction is a compare-and-set on the plan's status, so fifty
concurrent clicks on Approve start exactly one transaction. Every refusal is an audit record;
the bot turns it into an ephemeral message.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from agents.incident.events import ApprovalRecorded, PlanRejected, Undone
from agents.incident.machine import IncidentMachine
from agents.model import Incident, IncidentState, PlanStatus, Risk, Scope, TransactionId
from agents.planning.plan import Plan
from agents.policy import NamespacePolicy
from agents.tnr import UndoResult, UndoStatus
from storage.records import AuditVerb, StoredApproval, StoredAudit, StoredTimelineEvent

logger = logging.getLogger(__name__)


class Verdict(StrEnum):
    RECORDED = "recorded"  # counted; more approvals needed
    APPROVED = "approved"  # enough approvals: the caller now drives the incident (executes)
    REJECTED = "rejected"
    ALREADY = "already"  # a repeated click on a decided plan: nothing happened
    REFUSED = "refused"  # not allowed, expired, stale: nothing happened


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    verdict: Verdict
    message: str
    plan: Plan | None = None
    approvals: int = 0
    needed: int = 1

    @property
    def starts_transaction(self) -> bool:
        return self.verdict is Verdict.APPROVED


@dataclass(frozen=True, slots=True, kw_only=True)
class Person:
    """Who clicked: a Slack user id and the handles of the user groups they belong to."""

    user_id: str
    groups: Collection[str] = ()

    def matches(self, approvers: Collection[str]) -> bool:
        if not approvers:
            return True  # no approvers configured for this tier: anyone in the channel
        handles = {g if g.startswith("@") else f"@{g}" for g in self.groups}
        return self.user_id in approvers or bool(handles & set(approvers))


class Approvals:
    def __init__(self, machine: IncidentMachine) -> None:
        self._m = machine
        self._store = machine.store
        self._clock = machine.clock

    def _refuse(
        self,
        person: Person,
        scope: Scope | None,
        incident_id: str | None,
        reason: str,
        **detail: object,
    ) -> Decision:
        self._audit(
            AuditVerb.REFUSE, person, scope, incident_id, self._clock.now(), reason=reason, **detail
        )
        logger.info("refused %s: %s", person.user_id, reason)
        return Decision(verdict=Verdict.REFUSED, message=reason)

    def _audit(
        self,
        verb: AuditVerb,
        person: Person,
        scope: Scope | None,
        incident_id: str | None,
        at: datetime,
        **detail: object,
    ) -> None:
        self._store.audit.append(
            StoredAudit(
                at=at,
                actor=person.user_id,
                verb=verb,
                incident_id=incident_id,
                scope=scope.key if scope else None,
                detail=dict(detail),
            )
        )

    def _refuse_plan(self, person: Person, incident: Incident, plan: Plan, reason: str) -> Decision:
        return self._refuse(person, incident.scope, incident.id, reason, plan=plan.id)

    def _authorized(self, policy: NamespacePolicy, risk: Risk, person: Person) -> bool:
        return person.matches(policy.approvers_for(risk))

    def approve(self, plan_id: str, person: Person, *, content_hash: str | None = None) -> Decision:
        plan = self._m.plan(plan_id)
        incident = self._m.incident(plan.incident_id)
        policy = self._m.namespace_policy(incident)
        now = self._clock.now()
        if plan.status in (PlanStatus.APPROVED, PlanStatus.EXECUTED):
            return Decision(
                verdict=Verdict.ALREADY, message="This plan is already approved.", plan=plan
            )
        if (
            plan.status is not PlanStatus.PROPOSED
            or incident.state is not IncidentState.AWAITING_APPROVAL
        ):
            return self._refuse_plan(
                person, incident, plan, f"This plan is {plan.status}; it can no longer be approved."
            )
        if content_hash is not None and content_hash != plan.content_hash:
            return self._refuse_plan(
                person,
                incident,
                plan,
                "The plan changed since this message was posted; approve the current one.",
            )
        if plan.expires_at is not None and now >= plan.expires_at:
            return self._refuse_plan(person, incident, plan, "This approval request expired.")
        if not policy.may_act:
            return self._refuse_plan(
                person, incident, plan, f"Namespace {incident.scope.namespace} is observe-only."
            )
        if not self._authorized(policy, plan.risk, person):
            allowed = ", ".join(policy.approvers_for(plan.risk))
            return self._refuse_plan(
                person,
                incident,
                plan,
                f"You are not an approver for {plan.risk}-risk plans in "
                f"{incident.scope.namespace} (approvers: {allowed}).",
            )
        expires = plan.expires_at or now + timedelta(seconds=policy.approval_ttl_s)
        self._store.approvals.add(
            StoredApproval(
                id=f"appr-{uuid.uuid4().hex[:10]}",
                plan_id=plan.id,
                content_hash=plan.content_hash,
                user_id=person.user_id,
                created_at=now,
                expires_at=expires,
            )
        )
        self._audit(
            AuditVerb.APPROVE,
            person,
            incident.scope,
            incident.id,
            now,
            plan=plan.id,
            hash=plan.content_hash,
        )
        count = self._store.approvals.count_valid(plan.id, plan.content_hash, now)
        needed = policy.approvals_needed(plan.risk)
        # Exactly one caller wins this compare-and-set; the others see ALREADY. The machine
        # takes the decision (AWAITING_APPROVAL → EXECUTING) on its next drive.
        if count >= needed and not self._store.plans.set_status(
            plan.id,
            PlanStatus.APPROVED.value,
            expected=PlanStatus.PROPOSED.value,
            decided_at=now,
            decided_by=person.user_id,
        ):
            return Decision(
                verdict=Verdict.ALREADY, message="This plan is already approved.", plan=plan
            )
        self._m.notifier.notify(ApprovalRecorded(incident=incident, plan=plan, user=person.user_id))
        if count < needed:
            return Decision(
                verdict=Verdict.RECORDED,
                message=f"Approval recorded ({count}/{needed}); {plan.risk}-risk plans need "
                f"{needed} approvers.",
                plan=plan,
                approvals=count,
                needed=needed,
            )
        return Decision(
            verdict=Verdict.APPROVED,
            message="Approved: running the transaction.",
            plan=plan,
            approvals=count,
            needed=needed,
        )

    def reject(
        self, plan_id: str, person: Person, reason: str, *, content_hash: str | None = None
    ) -> Decision:
        """Reject the plan; with `content_hash`, only the contents the person saw (as for
        `approve`: a plan that changed since is refused, never rejected unseen)."""
        plan = self._m.plan(plan_id)
        incident = self._m.incident(plan.incident_id)
        policy = self._m.namespace_policy(incident)
        if plan.status is not PlanStatus.PROPOSED:
            return Decision(
                verdict=Verdict.ALREADY, message=f"This plan is already {plan.status}.", plan=plan
            )
        if content_hash is not None and content_hash != plan.content_hash:
            return self._refuse_plan(
                person,
                incident,
                plan,
                "The plan changed since this message was posted; reject the current one.",
            )
        if not self._authorized(policy, plan.risk, person):
            return self._refuse_plan(
                person, incident, plan, "Only approvers of this plan may reject it."
            )
        now = self._clock.now()
        reason = reason.strip() or "no reason given"
        if not self._store.plans.set_status(
            plan.id,
            PlanStatus.REJECTED.value,
            expected=PlanStatus.PROPOSED.value,
            decided_at=now,
            decided_by=person.user_id,
            reject_reason=reason,
        ):
            return Decision(
                verdict=Verdict.ALREADY, message="This plan was decided meanwhile.", plan=plan
            )
        self._audit(
            AuditVerb.REJECT, person, incident.scope, incident.id, now, plan=plan.id, reason=reason
        )
        # The machine takes the decision (AWAITING_APPROVAL → PLANNING) on its next drive.
        self._m.notifier.notify(
            PlanRejected(
                incident=incident,
                plan=plan,
                user=person.user_id,
                reason=reason,
            )
        )
        return Decision(
            verdict=Verdict.REJECTED,
            message="Rejected. Stratus will propose something else.",
            plan=plan,
        )

    def undo(
        self, transaction_id: str, person: Person, *, confirm_drift: bool = False
    ) -> UndoResult:
        tx = self._m.engine.ledger.transaction(TransactionId(transaction_id))
        incident = self._m.incident(tx.incident_id) if tx.incident_id else None
        policy = self._m.policy.for_namespace(tx.scope.namespace)
        risk = self._m.plan(tx.plan_id).risk if tx.plan_id else Risk.HIGH
        if not self._authorized(policy, risk, person):
            self._refuse(
                person,
                tx.scope,
                tx.incident_id,
                "Only approvers of this change may undo it.",
                transaction=tx.id,
            )
            return UndoResult(
                transaction_id=tx.id,
                status=UndoStatus.REFUSED,
                message="Only approvers of this change may undo it.",
            )
        result = self._m.undoer.undo(tx.id, actor=person.user_id, confirm_drift=confirm_drift)
        if incident is not None and result.status is UndoStatus.UNDONE:
            self._store.incidents.add_event(
                StoredTimelineEvent(
                    incident_id=incident.id,
                    at=self._clock.now(),
                    state=incident.state.value,
                    kind="undo",
                    message=f"Undone by {person.user_id}: {tx.id} ({result.message})",
                    data={"transaction": tx.id},
                )
            )
        self._m.notifier.notify(Undone(incident=incident, result=result))
        return result
