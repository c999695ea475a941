"""What a digest says, computed from storage alone.

A team lead reads the digest to know how the period went: per namespace, how many incidents
opened and were resolved, how fast Stratus detected and mitigated them, what it changed in
the cluster (transactions committed, aborted, undone) and what still waits for a person.
Everything comes from what Stratus persisted — incidents, their timelines and alerts, the
audit trail, plans — never from a live measurement, so the same database and period give the
same digest (a scheduled digest is reproducible after the fact).

Definitions, so that the figures mean the same thing every time:

* *opened*: incidents whose `opened_at` falls in the period;
* *resolved*: incidents whose timeline reached `resolved` in the period;
* *time to detect*: `opened_at` minus the earliest `starts_at` of its alerts, for incidents
  opened in the period (declared incidents are left out: a person detected them);
* *time to mitigate*: from `opened_at` to the timeline's first `resolved`, for incidents
  resolved in the period;
* *committed / aborted / undone*: distinct transactions with a `commit`, an `aborted` or
  `escalate` (a rollback that could not restore μ), or an `undone` audit record in the period.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import fmean

from agents.model import IncidentState, PlanStatus, Scope
from storage import Store
from storage.records import AuditVerb, StoredIncident

#: Audit verbs that end a transaction, by what the digest counts them as.
_TX_VERBS = {
    AuditVerb.COMMIT: "committed",
    AuditVerb.ABORTED: "aborted",
    AuditVerb.ESCALATE: "aborted",
    AuditVerb.UNDONE: "undone",
}
_MANY = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceDigest:
    namespace: str
    open_incidents: int
    worst_mu: float | None  # the highest latest μ among its open incidents
    opened: int
    resolved: int
    escalated: int
    mttd_s: float | None
    mttm_s: float | None
    committed: int
    aborted: int
    undone: int
    pending_approvals: int

    @property
    def healthy(self) -> bool:
        return self.open_incidents == 0

    @property
    def quiet(self) -> bool:
        """Nothing happened and nothing is open: the digest can say so in one line."""
        return not (
            self.open_incidents
            or self.opened
            or self.resolved
            or self.committed
            or self.aborted
            or self.undone
            or self.pending_approvals
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Digest:
    cluster: str
    start: datetime
    end: datetime
    namespaces: tuple[NamespaceDigest, ...]

    def total(self, field: str) -> int:
        return sum(int(getattr(n, field)) for n in self.namespaces)


def _first_transitions(store: Store, incident_id: str) -> dict[str, datetime]:
    """When the incident first entered each state it went through."""
    first: dict[str, datetime] = {}
    for event in store.incidents.timeline(incident_id):
        if event.kind == "transition":
            first.setdefault(event.state, event.at)
    return first


def _detect_s(store: Store, incident: StoredIncident) -> float | None:
    if incident.source == "declared":
        return None
    starts = [a.starts_at for a in store.incidents.alerts(incident.id)]
    if not starts:
        return None
    return max(0.0, (incident.opened_at - min(starts)).total_seconds())


def _mean(values: Sequence[float]) -> float | None:
    return fmean(values) if values else None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Flow:
    """What went through each namespace in the period: incidents opened, resolved and
    escalated, and the times to detect and to mitigate them."""

    opened: dict[str, int]
    resolved: dict[str, int]
    escalated: dict[str, int]
    detect: dict[str, list[float]]
    mitigate: dict[str, list[float]]


def _flow(
    store: Store, candidates: dict[str, StoredIncident], start: datetime, end: datetime
) -> _Flow:
    flow = _Flow(
        opened=defaultdict(int),
        resolved=defaultdict(int),
        escalated=defaultdict(int),
        detect=defaultdict(list),
        mitigate=defaultdict(list),
    )
    for row in candidates.values():
        ns = row.namespace
        if start <= row.opened_at < end:
            flow.opened[ns] += 1
            took = _detect_s(store, row)
            if took is not None:
                flow.detect[ns].append(took)
        reached = _first_transitions(store, row.id)
        resolved_at = reached.get(IncidentState.RESOLVED.value)
        if resolved_at is not None and start <= resolved_at < end:
            flow.resolved[ns] += 1
            flow.mitigate[ns].append((resolved_at - row.opened_at).total_seconds())
        escalated_at = reached.get(IncidentState.ESCALATED.value)
        if escalated_at is not None and start <= escalated_at < end:
            flow.escalated[ns] += 1
    return flow


def _transactions(
    store: Store, cluster: str, start: datetime, end: datetime
) -> dict[str, dict[str, set[str]]]:
    """The transactions that ended in the period, by namespace and by what they count as."""
    transactions: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for record in store.audit.query(verb=tuple(_TX_VERBS), since=start, until=end, limit=_MANY):
        if not record.scope or not record.transaction_id:
            continue
        scope = Scope.parse(record.scope)
        if scope.cluster == cluster:
            transactions[scope.namespace][_TX_VERBS[record.verb]].add(record.transaction_id)
    return transactions


def _pending(store: Store, open_rows: Sequence[StoredIncident], end: datetime) -> dict[str, int]:
    """The proposed plans still waiting for approval at `end`, by namespace."""
    waiting = {r.id: r for r in open_rows if r.state == IncidentState.AWAITING_APPROVAL.value}
    pending: dict[str, int] = defaultdict(int)
    for plan in store.plans.list_by_status(PlanStatus.PROPOSED.value):
        incident = waiting.get(plan.incident_id)
        if incident is not None and (plan.expires_at is None or plan.expires_at > end):
            pending[incident.namespace] += 1
    return pending


def _still_open(open_rows: Sequence[StoredIncident]) -> tuple[dict[str, int], dict[str, float]]:
    """The open incidents by namespace, and the worst latest μ among them."""
    worst: dict[str, float] = {}
    still_open: dict[str, int] = defaultdict(int)
    for row in open_rows:
        still_open[row.namespace] += 1
        figure = row.mu if row.mu is not None else row.mu0
        worst[row.namespace] = max(worst.get(row.namespace, figure), figure)
    return still_open, worst


def compute_digest(
    store: Store,
    *,
    cluster: str,
    namespaces: Sequence[str],
    start: datetime,
    end: datetime,
) -> Digest:
    """The digest of `[start, end)` for `namespaces` (plus any other namespace that had an
    incident in the period), as storage holds it."""
    open_rows = store.incidents.list_open(cluster=cluster)
    # Anything opened or resolved in the period is open now or was closed after `start`.
    candidates = {r.id: r for r in open_rows}
    for row in store.incidents.list_closed(limit=_MANY, cluster=cluster, since=start):
        candidates.setdefault(row.id, row)

    flow = _flow(store, candidates, start, end)
    transactions = _transactions(store, cluster, start, end)
    pending = _pending(store, open_rows, end)
    still_open, worst = _still_open(open_rows)

    seen = set(flow.opened) | set(flow.resolved) | set(transactions) | set(still_open)
    ordered = list(dict.fromkeys([*namespaces, *sorted(seen - set(namespaces))]))
    return Digest(
        cluster=cluster,
        start=start,
        end=end,
        namespaces=tuple(
            NamespaceDigest(
                namespace=ns,
                open_incidents=still_open[ns],
                worst_mu=worst.get(ns),
                opened=flow.opened[ns],
                resolved=flow.resolved[ns],
                escalated=flow.escalated[ns],
                mttd_s=_mean(flow.detect[ns]),
                mttm_s=_mean(flow.mitigate[ns]),
                committed=len(transactions[ns]["committed"]),
                aborted=len(transactions[ns]["aborted"]),
                undone=len(transactions[ns]["undone"]),
                pending_approvals=pending[ns],
            )
            for ns in ordered
        ),
    )
