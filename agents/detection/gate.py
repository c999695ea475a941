"""Grace and flap suppression: whether a firing alert may open an incident yet.

* **Grace.** An alert must have been firing for `grace_s[source]` seconds (from its
  `starts_at`) before it counts: Prometheus rules have `for:` for this, the scan's synthetic
  alerts need the same, or one slow readiness probe would open an incident.
* **Flap cooldown.** An alert that resolved and fires again within `cooldown_s` is held; it
  opens an incident only if it is still firing `cooldown_s` after the re-fire (then it is a
  sustained failure, not a flap). Held and pending alerts are kept here until `due` hands
  them back, so an Alertmanager that only re-sends every few hours still gets them promoted.

The gate also remembers when each alert was last seen resolved (never forgotten by a hold), so
the detector can tell an alert that kept firing since some instant from one that resolved and
fired again (`resolved_after`), and it keeps alerts the detector holds for its own reasons
until a given instant (`wait(alert, until=...)`).

The memory is per fingerprint and bounded (least recently seen forgotten first); a restart
forgets it, at worst letting one flap through.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from agents.model import Alert


class Gate(StrEnum):
    READY = "ready"
    PENDING = "pending"  # inside its grace period
    HELD = "held"  # re-fired within the flap cooldown


@dataclass(slots=True)
class _Track:
    resolved_at: datetime | None = None
    hold_until: datetime | None = None
    audited: tuple[str, str] | None = None  # (status, disposition) last written to the audit
    last_resolved: datetime | None = None  # the latest resolved report, kept through holds
    wake_at: datetime | None = None  # a waiting alert is not due before this


class AlertGate:
    def __init__(
        self, *, grace_s: Mapping[str, float], cooldown_s: float, capacity: int = 10_000
    ) -> None:
        self._grace = dict(grace_s)
        self._cooldown = timedelta(seconds=cooldown_s)
        self._capacity = capacity
        self._tracks: OrderedDict[str, _Track] = OrderedDict()
        self._waiting: OrderedDict[str, Alert] = OrderedDict()

    def _track(self, fingerprint: str) -> _Track:
        track = self._tracks.get(fingerprint)
        if track is None:
            track = self._tracks[fingerprint] = _Track()
            while len(self._tracks) > self._capacity:
                self._tracks.popitem(last=False)
        else:
            self._tracks.move_to_end(fingerprint)
        return track

    def grace_for(self, alert: Alert) -> timedelta:
        return timedelta(seconds=self._grace.get(alert.source, 0.0))

    def check(self, alert: Alert, now: datetime) -> Gate:
        """Classify a firing alert, remembering any flap hold it starts."""
        if now - alert.starts_at < self.grace_for(alert):
            return Gate.PENDING
        track = self._track(alert.fingerprint)
        if track.resolved_at is not None and track.hold_until is None:
            if now - track.resolved_at < self._cooldown:
                track.hold_until = now + self._cooldown
            else:
                track.resolved_at = None
        if track.hold_until is not None:
            if now < track.hold_until:
                return Gate.HELD
            track.resolved_at = track.hold_until = None
        return Gate.READY

    def resolved(self, alert: Alert, now: datetime) -> None:
        track = self._track(alert.fingerprint)
        track.resolved_at, track.hold_until = now, None
        track.last_resolved, track.wake_at = now, None
        self._waiting.pop(alert.fingerprint, None)

    def resolved_after(self, fingerprint: str, at: datetime) -> bool:
        """The alert was reported resolved after `at` (as far as this gate remembers)."""
        track = self._tracks.get(fingerprint)
        return track is not None and track.last_resolved is not None and track.last_resolved > at

    def wait(self, alert: Alert, *, until: datetime | None = None) -> None:
        """Keep a pending or held alert until it is due (or resolves); with `until`, it is
        not due before that instant whatever its grace and hold say."""
        self._track(alert.fingerprint).wake_at = until
        self._waiting[alert.fingerprint] = alert
        self._waiting.move_to_end(alert.fingerprint)
        while len(self._waiting) > self._capacity:
            self._waiting.popitem(last=False)

    def done(self, fingerprint: str) -> None:
        self._waiting.pop(fingerprint, None)
        track = self._tracks.get(fingerprint)
        if track is not None:
            track.wake_at = None

    def waiting(self) -> list[Alert]:
        return list(self._waiting.values())

    def due(self, now: datetime) -> list[Alert]:
        """Waiting alerts whose grace or hold has run out by `now`."""
        due = []
        for alert in self._waiting.values():
            track = self._tracks.get(alert.fingerprint)
            hold = track.hold_until if track is not None else None
            wake = track.wake_at if track is not None else None
            if (
                now - alert.starts_at >= self.grace_for(alert)
                and (hold is None or now >= hold)
                and (wake is None or now >= wake)
            ):
                due.append(alert)
        return due

    def should_audit(self, fingerprint: str, status: str, disposition: str) -> bool:
        """True once per change of (status, disposition): a storm of repeats is one record."""
        track = self._track(fingerprint)
        if track.audited == (status, disposition):
            return False
        track.audited = (status, disposition)
        return True
