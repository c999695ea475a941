"""Row builders with sensible defaults, so each test states only what it is about."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from storage.records import (
    StoredAlert,
    StoredIncident,
    StoredPlan,
    StoredTimelineEvent,
    StoredTransaction,
    StoredUndoEntry,
)
from tests.storage.conftest import T0


def incident(id: str = "inc-1", **fields: Any) -> StoredIncident:
    values: dict[str, Any] = {
        "title": "frontend 5xx",
        "cluster": "lab",
        "namespace": "hotel",
        "state": "detected",
        "service": "frontend",
        "mu0": 3.0,
        "opened_at": T0,
        "updated_at": T0,
        "group_key": "lab/hotel/HighErrorRate",
    }
    values.update(fields)
    return StoredIncident(id=id, **values)


def alert(incident_id: str = "inc-1", fingerprint: str = "fp-1", **fields: Any) -> StoredAlert:
    seen: datetime = fields.pop("seen", T0)
    values: dict[str, Any] = {
        "alertname": "HighErrorRate",
        "status": "firing",
        "labels": {"namespace": "hotel", "service": "frontend"},
        "annotations": {"summary": "5xx above 5%"},
        "starts_at": T0,
        "first_seen": seen,
        "last_seen": seen,
    }
    values.update(fields)
    return StoredAlert(incident_id=incident_id, fingerprint=fingerprint, **values)


def event(incident_id: str = "inc-1", **fields: Any) -> StoredTimelineEvent:
    values: dict[str, Any] = {
        "at": T0,
        "state": "detected",
        "kind": "transition",
        "message": "detected",
    }
    values.update(fields)
    return StoredTimelineEvent(incident_id=incident_id, **values)


def plan(id: str = "plan-1", incident_id: str = "inc-1", **fields: Any) -> StoredPlan:
    values: dict[str, Any] = {
        "status": "proposed",
        "risk": "low",
        "content_hash": "h1",
        "actions": [{"type": "scale", "target": "Deployment/hotel/frontend", "replicas": 3}],
        "rationale": "more replicas",
        "created_at": T0,
    }
    values.update(fields)
    return StoredPlan(id=id, incident_id=incident_id, **values)


def transaction(id: str = "txn-1", **fields: Any) -> StoredTransaction:
    values: dict[str, Any] = {
        "incident_id": "inc-1",
        "cluster": "lab",
        "namespace": "hotel",
        "status": "open",
        "started_at": T0,
        "fencing_token": 1,
        "holder": "replica-1",
    }
    values.update(fields)
    return StoredTransaction(id=id, **values)


def undo_entry(
    id: str,
    transaction_id: str = "txn-1",
    *,
    kind: str = "Deployment",
    name: str = "frontend",
    namespace: str | None = "hotel",
    **fields: Any,
) -> StoredUndoEntry:
    values: dict[str, Any] = {
        "action": {"type": "scale", "replicas": 3},
        "target_api_version": "apps/v1",
        "snapshot": {"kind": kind, "metadata": {"name": name}, "spec": {"replicas": 1}},
        "created_at": T0,
    }
    values.update(fields)
    return StoredUndoEntry(
        id=id,
        transaction_id=transaction_id,
        target_kind=kind,
        target_name=name,
        target_namespace=namespace,
        **values,
    )
