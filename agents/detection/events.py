"""What the detector decides and what it hands to the bot.

Every alert gets a `Disposition` (why it did or did not open an incident: useful in logs and
tests). Notifications are values the bot renders for Slack: one `IncidentOpened` per incident,
and `AlertsUpdated` coalesced per incident so that an alert storm is a handful of messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from agents.model import Alert, Incident, IncidentId


class Disposition(StrEnum):
    OPENED = "opened"  # opened a new incident
    ATTACHED = "attached"  # joined the open incident of its scope
    UPDATED = "updated"  # a new report of an alert the incident already holds
    PENDING = "pending"  # firing for less than the grace period: recorded, opens nothing yet
    HELD = "held"  # re-fired within the flap cooldown: recorded, opens nothing yet
    SETTLING = "settling"  # raised by a disruption the cluster already repaired: held once
    RECORDED = "recorded"  # resolved, with no open incident to update
    CLOSED = "closed"  # started before its scope's latest incident closed: that one's, recorded
    HANDED_OVER = "handed_over"  # an escalated incident's alert still firing in its cooldown
    LAGGING = "lagging"  # read over a window that still reaches back before the last close
    UNSCOPED = "unscoped"  # no namespace label: no scope to open an incident in
    IGNORED = "ignored"  # a namespace Stratus does not cover
    QUEUED = "queued"  # received by a follower replica: in the inbox for the leader to ingest


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertDisposition:
    fingerprint: str
    name: str
    disposition: Disposition
    incident_id: IncidentId | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentOpened:
    """Announce a new incident (once)."""

    incident: Incident
    alerts: tuple[Alert, ...]
    findings: tuple[str, ...] = ()  # what the μ0 measurement saw, one line each


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertsUpdated:
    """`new` alerts joined the incident, `resolved` of its alerts resolved, since the last
    notification (coalesced: at most one per incident per update interval)."""

    incident_id: IncidentId
    at: datetime
    new: tuple[Alert, ...]
    resolved: tuple[Alert, ...]

    @property
    def text(self) -> str:
        parts = []
        if self.new:
            names = sorted({a.name for a in self.new})
            shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
            parts.append(f"{len(self.new)} new alert{'s' if len(self.new) != 1 else ''} ({shown})")
        if self.resolved:
            parts.append(f"{len(self.resolved)} resolved")
        return "; ".join(parts) or "no change"


DetectorEvent = IncidentOpened | AlertsUpdated


@dataclass(frozen=True, slots=True, kw_only=True)
class Detection:
    """The result of one `ingest` or `tick`."""

    dispositions: tuple[AlertDisposition, ...] = ()
    events: tuple[DetectorEvent, ...] = ()

    @property
    def opened(self) -> tuple[Incident, ...]:
        return tuple(e.incident for e in self.events if isinstance(e, IncidentOpened))

    def of(self, fingerprint: str) -> Disposition | None:
        """The last disposition of `fingerprint` in this result."""
        found = [d.disposition for d in self.dispositions if d.fingerprint == fingerprint]
        return found[-1] if found else None
