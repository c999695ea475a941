"""After an incident closes: which firing alerts still belong to it.

Alerts outlive the failure they report. Alertmanager keeps an alert firing until its rule's
expression clears, and the expression often reads a window (an error ratio over five minutes)
that still holds the failure minutes after a fix that validation already confirmed. Read as
news, each such alert would open a new incident the step after the old one closed — the same
failure, a second channel, and a planner asked to fix a scope that is healthy.

So, for a scope with no open incident, a firing alert is judged against the incidents of that
scope that closed before it:

* **It started before the latest close** (its `starts_at` — Alertmanager's, or the first scan
  that saw the condition): it was firing while that incident was open, so it is that
  incident's, and it opens nothing. Only a condition that starts after the close, or that
  resolves and fires again (a new `starts_at`), may open an incident.
* **Its condition is read over a window that still reaches back before the close** (the
  alert says so: label or annotation `window_s`, as the scan's SLO alerts do): a condition
  first seen after the close may be the old failure still inside the window. It waits until
  the window holds only time after the close (`closed_at + window`); if it still fires then,
  it is a failure of its own and opens an incident.
* **It is one of an escalated incident's own alerts, still firing, within the hand-over
  cooldown**: a person was handed that incident; the very same alerts must not reopen it
  behind their back, even when their source restarted and reports a later `starts_at`. An
  alert that resolved after the close and fired again is news, and is judged as such.

Both are recorded (the audit trail), never dropped silently. Closed incidents are read from
storage, so a restarted bot judges the same way; what the detector caches here (closed
incidents do not change) only saves reads.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from agents.model import Alert, IncidentState, Scope
from storage import Store

logger = logging.getLogger(__name__)

#: Closed incidents read per look-up (newest first, across the cluster's scopes).
_READ_LIMIT = 500
#: Closed incidents whose escalation flag and fingerprints are kept.
_CACHE = 256


class Belonging(StrEnum):
    CLOSED = "closed"  # it started before the scope's latest close
    LAGGING = "lagging"  # its window still reaches back before the close
    HANDED_OVER = "handed_over"  # an escalated incident's alert, still firing, in the cooldown


@dataclass(frozen=True, slots=True, kw_only=True)
class ClosedIncident:
    incident_id: str
    closed_at: datetime
    escalated: bool
    fingerprints: frozenset[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    belongs: Belonging
    incident_id: str
    until: datetime | None = None  # a hand-over ends then; a start before the close never does


def window_of(alert: Alert) -> timedelta | None:
    """The window the alert's condition is read over, when the alert says (`window_s`)."""
    text = alert.labels.get("window_s") or alert.annotations.get("window_s")
    try:
        seconds = float(text) if text else 0.0
    except ValueError:
        return None
    return timedelta(seconds=seconds) if seconds > 0 else None


class Closures:
    def __init__(self, store: Store, *, handover_cooldown_s: float, horizon_s: float) -> None:
        """`handover_cooldown_s`: how long an escalated incident's alerts stay with it;
        `horizon_s`: how far back closes are read (an alert older than the latest close
        within it is that incident's; older closes are not looked at)."""
        self._store = store
        self._cooldown = timedelta(seconds=handover_cooldown_s)
        self._horizon = timedelta(seconds=horizon_s)
        self._known: OrderedDict[str, tuple[bool, frozenset[str]]] = OrderedDict()

    def recent(self, scope: Scope, now: datetime) -> list[ClosedIncident]:
        """The scope's incidents closed within the horizon, newest first."""
        rows = self._store.incidents.list_closed(
            cluster=scope.cluster, since=now - self._horizon, limit=_READ_LIMIT
        )
        out = []
        for row in rows:
            if row.group_key != scope.key or row.closed_at is None:
                continue
            escalated, fingerprints = self._details(row.id)
            out.append(
                ClosedIncident(
                    incident_id=row.id,
                    closed_at=row.closed_at,
                    escalated=escalated,
                    fingerprints=fingerprints,
                )
            )
        return out

    def judge(
        self,
        alert: Alert,
        closed: list[ClosedIncident],
        now: datetime,
        resolved_since: Callable[[str, datetime], bool],
    ) -> Placement | None:
        """Whether a firing alert of a scope without an open incident belongs to one of the
        scope's closed incidents (`closed`, newest first). `resolved_since(fingerprint, t)`:
        the alert was seen resolved after `t`."""
        if not closed:
            return None
        latest = closed[0]
        if alert.starts_at < latest.closed_at:
            return Placement(belongs=Belonging.CLOSED, incident_id=latest.incident_id)
        window = window_of(alert)
        if window is not None and now < latest.closed_at + window:
            return Placement(
                belongs=Belonging.LAGGING,
                incident_id=latest.incident_id,
                until=latest.closed_at + window,
            )
        for incident in closed:
            if now - incident.closed_at >= self._cooldown:
                break  # newest first: the rest closed even earlier
            if (
                incident.escalated
                and alert.fingerprint in incident.fingerprints
                and not resolved_since(alert.fingerprint, incident.closed_at)
            ):
                return Placement(
                    belongs=Belonging.HANDED_OVER,
                    incident_id=incident.incident_id,
                    until=incident.closed_at + self._cooldown,
                )
        return None

    def _details(self, incident_id: str) -> tuple[bool, frozenset[str]]:
        known = self._known.get(incident_id)
        if known is None:
            escalated = any(
                e.state == IncidentState.ESCALATED.value
                for e in self._store.incidents.timeline(incident_id)
            )
            fingerprints = frozenset(
                r.fingerprint for r in self._store.incidents.alerts(incident_id)
            )
            known = self._known[incident_id] = (escalated, fingerprints)
            while len(self._known) > _CACHE:
                self._known.popitem(last=False)
        else:
            self._known.move_to_end(incident_id)
        return known
