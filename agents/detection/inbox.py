"""The alert inbox between replicas: only the leader runs detection (its grace, flap and
settling holds live in one process), so a follower that receives a webhook call records the
alerts in storage and answers at once; the leader ingests them on its next pass.

    inbox = AlertInbox(store, cluster="prod", clock=clock)
    inbox.post(alerts)                  # a follower: Detection with every alert QUEUED
    inbox.drain(detector.ingest)        # the leader, every retry period

An entry is removed only after its alerts were ingested. A leader that dies in between
leaves it for the next, whose ingest of the same alerts (same fingerprints) adds nothing new.
An entry that does not decode (written by an older or newer version) is logged and dropped:
Alertmanager sends firing alerts again at its next group interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from agents.detection.events import AlertDisposition, Detection, Disposition
from agents.model import Alert, AlertStatus, JsonObject
from agents.ports import Clock
from storage import Store

logger = logging.getLogger(__name__)


def encode(alert: Alert) -> JsonObject:
    return {
        "fingerprint": alert.fingerprint,
        "name": alert.name,
        "status": alert.status.value,
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "starts_at": alert.starts_at.isoformat(),
        "ends_at": alert.ends_at.isoformat() if alert.ends_at else None,
        "source": alert.source,
    }


def decode(data: JsonObject) -> Alert:
    """Raises KeyError, TypeError or ValueError for an entry this version cannot read."""
    ends = data.get("ends_at")
    return Alert(
        fingerprint=str(data["fingerprint"]),
        name=str(data["name"]),
        status=AlertStatus(data["status"]),
        labels={str(k): str(v) for k, v in dict(data["labels"]).items()},
        annotations={str(k): str(v) for k, v in dict(data.get("annotations") or {}).items()},
        starts_at=datetime.fromisoformat(str(data["starts_at"])),
        ends_at=datetime.fromisoformat(str(ends)) if ends else None,
        source=str(data.get("source") or "alertmanager"),
    )


class AlertInbox:
    def __init__(self, store: Store, *, cluster: str, clock: Clock) -> None:
        self._store = store
        self._cluster = cluster
        self._clock = clock

    def post(self, alerts: Sequence[Alert]) -> Detection:
        """Record alerts for the leader (StorageError reaches the caller: the webhook answers
        503 and Alertmanager sends them again)."""
        if alerts:
            self._store.inbox.put(self._cluster, [encode(a) for a in alerts], self._clock.now())
        return Detection(
            dispositions=tuple(
                AlertDisposition(
                    fingerprint=a.fingerprint, name=a.name, disposition=Disposition.QUEUED
                )
                for a in alerts
            )
        )

    def drain(self, ingest: Callable[[Sequence[Alert]], object]) -> int:
        """Ingest every waiting entry of this cluster, oldest first; the number of alerts."""
        count = 0
        for entry_id, encoded in self._store.inbox.take(self._cluster):
            try:
                alerts = [decode(a) for a in encoded]
            except (KeyError, TypeError, ValueError) as e:
                logger.warning("alert inbox entry %s is unreadable, dropped: %r", entry_id, e)
                self._store.inbox.remove([entry_id])
                continue
            ingest(alerts)
            self._store.inbox.remove([entry_id])
            count += len(alerts)
        return count
