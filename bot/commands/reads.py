"""The questions `/stratus`, the App Home and the digest ask of storage and the brain.

Read-only, and returned as the agents' domain values (never table rows), so the renderers stay
pure functions of values. `namespace_health` is the only one that measures (μ through the
severity meter: cluster reads and metrics); the others read storage only and are cheap enough
to run before a view is published.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agents.detection.records import incident_from_record
from agents.incident.approvals import Person
from agents.incident.codec import plan_from_record
from agents.model import (
    Autonomy,
    Diagnosis,
    Incident,
    IncidentId,
    IncidentState,
    PlanStatus,
    TimelineEvent,
    TransactionId,
    TransactionStatus,
)
from agents.planning.plan import Plan
from agents.severity import Severity
from agents.tnr.records import TransactionRecord
from bot.commands.context import CommandContext

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingApproval:
    """A plan waiting for approval, with who may approve it and who already did."""

    incident: Incident
    plan: Plan
    approvers: tuple[str, ...]  # user ids and @group handles; empty: anyone
    approved_by: tuple[str, ...]
    needed: int

    def waits_for(self, person: Person) -> bool:
        return person.user_id not in self.approved_by and person.matches(self.approvers)


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceHealth:
    namespace: str
    autonomy: Autonomy
    severity: Severity
    open_incidents: tuple[Incident, ...]
    pending: tuple[PendingApproval, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentCard:
    """An open incident as a list shows it: where it stands and what it is thought to be."""

    incident: Incident
    diagnosis: Diagnosis | None


def open_incidents(
    ctx: CommandContext, namespace: str | None = None, *, cluster: str | None = None
) -> list[Incident]:
    """Open incidents of `cluster` (default: the one this bot serves; deployments for other
    clusters share the database, so theirs can be listed too)."""
    rows = ctx.brain.store.incidents.list_open(
        cluster=cluster or ctx.brain.cluster, namespace=namespace
    )
    return [incident_from_record(r) for r in rows]


def incident_cards(ctx: CommandContext, incidents: Sequence[Incident]) -> list[IncidentCard]:
    return [
        IncidentCard(incident=i, diagnosis=ctx.brain.machine.diagnosis(i.id)) for i in incidents
    ]


def recently_closed(
    ctx: CommandContext, limit: int = 5, *, cluster: str | None = None
) -> list[Incident]:
    rows = ctx.brain.store.incidents.list_closed(limit=limit, cluster=cluster or ctx.brain.cluster)
    return [incident_from_record(r) for r in rows]


def pending_approvals(ctx: CommandContext, namespace: str | None = None) -> list[PendingApproval]:
    """Current plans of incidents in AWAITING_APPROVAL that have not expired, oldest first."""
    now = ctx.brain.clock.now()
    out: list[PendingApproval] = []
    for row in ctx.brain.store.plans.list_by_status(PlanStatus.PROPOSED.value):
        plan = plan_from_record(row)
        if plan.expires_at is not None and plan.expires_at <= now:
            continue
        incident = ctx.brain.machine.incident(plan.incident_id)
        if incident.state is not IncidentState.AWAITING_APPROVAL:
            continue
        if incident.scope.cluster != ctx.brain.cluster:
            continue
        if namespace is not None and incident.scope.namespace != namespace:
            continue
        current = ctx.brain.machine.current_plan(incident.id)
        if current is None or current.id != plan.id:
            continue
        policy = ctx.brain.policy.for_namespace(incident.scope.namespace)
        approved = ctx.brain.store.approvals.list_valid(plan.id, plan.content_hash, now)
        out.append(
            PendingApproval(
                incident=incident,
                plan=plan,
                approvers=policy.approvers_for(plan.risk),
                approved_by=tuple(a.user_id for a in approved),
                needed=policy.approvals_needed(plan.risk),
            )
        )
    return out


def waiting_for(person: Person, pending: Sequence[PendingApproval]) -> list[PendingApproval]:
    return [p for p in pending if p.waits_for(person)]


def namespace_health(ctx: CommandContext, namespace: str) -> NamespaceHealth:
    return NamespaceHealth(
        namespace=namespace,
        autonomy=ctx.brain.policy.for_namespace(namespace).autonomy,
        severity=ctx.brain.meter.measure(ctx.scope(namespace)),
        open_incidents=tuple(open_incidents(ctx, namespace)),
        pending=tuple(pending_approvals(ctx, namespace)),
    )


def recent_transactions(ctx: CommandContext, limit: int = 5) -> list[TransactionRecord]:
    """Committed transactions (the ones Undo applies to) of the covered namespaces, newest
    first."""
    ledger = ctx.brain.machine.engine.ledger
    found: list[TransactionRecord] = []
    for namespace in ctx.namespaces:
        # Newest first: the `limit` newest of each namespace are enough for the newest overall.
        rows = ctx.brain.store.transactions.list_committed_for_scope(ctx.brain.cluster, namespace)[
            :limit
        ]
        found.extend(ledger.transaction(TransactionId(row.id)) for row in rows)
    found.sort(key=lambda t: (t.started_at, t.id), reverse=True)
    return [t for t in found if t.status is TransactionStatus.COMMITTED][:limit]


def transaction(ctx: CommandContext, transaction_id: str) -> TransactionRecord:
    """Raises `storage.NotFound`."""
    return ctx.brain.machine.engine.ledger.transaction(TransactionId(transaction_id))


def channel_namespace(ctx: CommandContext, channel_id: str, channel_name: str) -> str | None:
    """The namespace a channel is about: that of an open incident whose messages live in it,
    else a covered namespace its name contains (`#hotel-reservation-oncall`), else None."""
    for incident in open_incidents(ctx):
        messages = ctx.brain.store.slack_messages.find(incident_id=incident.id)
        if any(m.channel in (channel_id, channel_name) for m in messages):
            return incident.scope.namespace
    named = [
        ns
        for ns in ctx.namespaces
        if re.search(rf"(^|[-_]){re.escape(ns)}($|[-_])", channel_name or "")
    ]
    return max(named, key=len) if named else None


def timeline(ctx: CommandContext, incident_id: str) -> list[TimelineEvent]:
    return [
        TimelineEvent(
            incident_id=IncidentId(r.incident_id),
            at=r.at,
            state=IncidentState(r.state),
            kind=r.kind,
            message=r.message,
            data=dict(r.data),
        )
        for r in ctx.brain.store.incidents.timeline(incident_id)
    ]
