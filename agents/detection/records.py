"""Between detection's values and storage's records (`storage.records`): incidents and their
alerts."""

from __future__ import annotations

from datetime import datetime

from agents.model import Alert, AlertStatus, Incident, IncidentId, IncidentState, Scope
from storage.records import StoredAlert, StoredIncident


def incident_from_record(row: StoredIncident) -> Incident:
    return Incident(
        id=IncidentId(row.id),
        title=row.title,
        scope=Scope(cluster=row.cluster, namespace=row.namespace),
        state=IncidentState(row.state),
        mu0=row.mu0,
        opened_at=row.opened_at,
        updated_at=row.updated_at,
        service=row.service,
        attempt=row.attempt,
        mu=row.mu,
        closed_at=row.closed_at,
        source=row.source,
    )


def alert_record(alert: Alert, incident_id: str, seen: datetime) -> StoredAlert:
    return StoredAlert(
        incident_id=incident_id,
        fingerprint=alert.fingerprint,
        alertname=alert.name,
        status=alert.status.value,
        labels=dict(alert.labels),
        annotations=dict(alert.annotations),
        starts_at=alert.starts_at,
        ends_at=alert.ends_at,
        first_seen=seen,
        last_seen=seen,
    )


def alert_from_record(row: StoredAlert, *, source: str = "alertmanager") -> Alert:
    """The alert as last reported. The table does not keep the source; callers that know it
    pass it."""
    return Alert(
        fingerprint=row.fingerprint,
        name=row.alertname,
        status=AlertStatus(row.status),
        labels={str(k): str(v) for k, v in row.labels.items()},
        annotations={str(k): str(v) for k, v in row.annotations.items()},
        starts_at=row.starts_at,
        ends_at=row.ends_at,
        source=source,
    )
