"""Opening an incident: its baseline μ0, its title and id, and the one storage transaction
that persists it in state DETECTED with its alerts and its first timeline event.

**μ0** is the severity measured at detection (`SeverityMeter.measure`). Metrics lag the alert
that fired, so the measurement may read 0, or be partial when a source failed. Then μ0 is
raised to the weight of the alerts that opened the incident (critical 3, warning 1 by
default): the scope is at least as unhealthy as its alerts say, and a μ0 of 0 would hold every
transaction to "perfectly healthy at once". A measurement above 0 is taken as it is, so the
bound never exceeds what the meter saw when it could see.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agents.detection.ids import incident_id
from agents.detection.records import alert_record, incident_from_record
from agents.model import Alert, Incident, IncidentState, Scope
from agents.redact import redact_text
from agents.severity import Severity, SeverityWeights
from storage import Conflict, Store
from storage.records import StoredIncident, StoredTimelineEvent

logger = logging.getLogger(__name__)

TITLE_MAX = 120
ID_ATTEMPTS = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Opening:
    incident: Incident
    alerts: tuple[Alert, ...]  # distinct, the leading alert first
    findings: tuple[str, ...]
    alert_weight: float


def alert_weight(alerts: Sequence[Alert], weights: SeverityWeights) -> float:
    return sum(
        weights.alert_critical if a.severity == "critical" else weights.alert_warning
        for a in alerts
    )


def baseline_mu(severity: Severity, weight: float) -> float:
    if severity.mu > 0 and not severity.partial:
        return severity.mu
    return max(severity.mu, weight)


def title_for(primary: Alert, scope: Scope, count: int) -> str:
    subject = primary.service or scope.namespace
    what = primary.annotations.get("summary") or primary.name
    # The scan's summaries already start with their service ("geo: 69% of requests fail").
    title = redact_text(what if what.startswith(f"{subject}: ") else f"{subject}: {what}")
    if count > 1:
        title += f" (+{count - 1} more alert{'s' if count > 2 else ''})"
    if len(title) > TITLE_MAX:
        title = title[: TITLE_MAX - 1] + "…"
    return title


def open_incident(
    store: Store,
    *,
    scope: Scope,
    alerts: Sequence[Alert],
    severity: Severity,
    weights: SeverityWeights,
    now: datetime,
) -> Opening:
    """Persist a new incident for `alerts` (firing, of one scope). Raises storage errors."""
    # Critical first, then the oldest: the alert the title and the service come from.
    ordered = sorted(alerts, key=lambda a: (a.severity != "critical", a.starts_at, a.name))
    unique = tuple({a.fingerprint: a for a in ordered}.values())
    primary = unique[0]
    weight = alert_weight(unique, weights)
    mu0 = baseline_mu(severity, weight)
    title = title_for(primary, scope, len(unique))
    for attempt in range(ID_ATTEMPTS):
        iid = incident_id(
            scope=scope,
            service=primary.service,
            at=now,
            fingerprints=[a.fingerprint for a in unique],
            attempt=attempt,
        )
        row = StoredIncident(
            id=iid,
            title=title,
            cluster=scope.cluster,
            namespace=scope.namespace,
            state=IncidentState.DETECTED.value,
            service=primary.service,
            source=primary.source,
            mu0=mu0,
            mu=severity.mu,
            opened_at=now,
            updated_at=now,
            group_key=scope.key,
        )
        event = StoredTimelineEvent(
            incident_id=iid,
            at=now,
            state=IncidentState.DETECTED.value,
            kind="transition",
            message=f"Detected: {title} (μ0 {mu0:g})",
            data={
                "mu0": mu0,
                "measured_mu": severity.mu,
                "alert_weight": weight,
                "partial": severity.partial,
                "findings": list(severity.findings),
                "alerts": [a.fingerprint for a in unique],
            },
        )
        try:
            created = store.incidents.create(
                row, alerts=[alert_record(a, iid, now) for a in unique], events=[event]
            )
        except Conflict:
            logger.info("incident id %s is taken; trying a longer one", iid)
            continue
        logger.info(
            "incident %s opened in %s: %s (μ0 %s, %d alert(s))",
            iid,
            scope.key,
            title,
            mu0,
            len(unique),
        )
        return Opening(
            incident=incident_from_record(created),
            alerts=unique,
            findings=severity.findings,
            alert_weight=weight,
        )
    raise Conflict(f"no free incident id for {scope.key} after {ID_ATTEMPTS} attempts")
