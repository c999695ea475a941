"""Coalescing of "n new alerts on the incident" notifications.

An incident's channel gets at most one update per `interval_s`: alerts that join (or resolve)
in between are gathered and announced together. "Incident opened" counts as the first
message, so a storm right after opening waits for the first interval to pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from agents.model import Alert, IncidentId


@dataclass(slots=True)
class _Pending:
    last_sent: datetime | None
    new: dict[str, Alert] = field(default_factory=dict)
    resolved: dict[str, Alert] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    incident_id: IncidentId
    new: tuple[Alert, ...]
    resolved: tuple[Alert, ...]


class Coalescer:
    def __init__(self, *, interval_s: float) -> None:
        self._interval = timedelta(seconds=interval_s)
        self._incidents: dict[IncidentId, _Pending] = {}

    def _get(self, incident_id: IncidentId) -> _Pending:
        pending = self._incidents.get(incident_id)
        if pending is None:
            # Unknown (say, after a restart): the next update may go out at once.
            pending = self._incidents[incident_id] = _Pending(last_sent=None)
        return pending

    def opened(self, incident_id: IncidentId, at: datetime) -> None:
        self._incidents[incident_id] = _Pending(last_sent=at)

    def add_new(self, incident_id: IncidentId, alert: Alert) -> None:
        pending = self._get(incident_id)
        pending.resolved.pop(alert.fingerprint, None)
        pending.new[alert.fingerprint] = alert

    def add_resolved(self, incident_id: IncidentId, alert: Alert) -> None:
        pending = self._get(incident_id)
        if pending.new.pop(alert.fingerprint, None) is None:
            pending.resolved[alert.fingerprint] = alert

    def due(self, now: datetime) -> list[Batch]:
        """Batches whose interval has passed; each incident's pending set is emptied."""
        batches = []
        for incident_id, pending in self._incidents.items():
            if not (pending.new or pending.resolved):
                continue
            if pending.last_sent is not None and now - pending.last_sent < self._interval:
                continue
            batches.append(
                Batch(
                    incident_id=incident_id,
                    new=tuple(pending.new.values()),
                    resolved=tuple(pending.resolved.values()),
                )
            )
            pending.new, pending.resolved, pending.last_sent = {}, {}, now
        return batches

    def forget(self, incident_id: IncidentId) -> None:
        self._incidents.pop(incident_id, None)
