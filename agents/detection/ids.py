"""Incident ids people can say out loud: `INC-20260105-geo-3f2a`.

Date, a slug of the service (or namespace) the alerts point at, and four hex digits of a hash
of scope, instant and alerts. Deterministic on purpose: the bench replays a scenario with the
same seed and gets the same ids. A collision (same slug, same day, same hash prefix) is
resolved by the caller asking for the next `attempt`, which lengthens the suffix.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from datetime import datetime

from agents.model import IncidentId, Scope

_NOT_SLUG = re.compile(r"[^a-z0-9]+")
SLUG_MAX = 20


def slug(text: str) -> str:
    """Lowercase letters, digits and single dashes, at most `SLUG_MAX` characters."""
    cleaned = _NOT_SLUG.sub("-", text.lower()).strip("-")
    return cleaned[:SLUG_MAX].rstrip("-") or "incident"


def incident_id(
    *,
    scope: Scope,
    service: str | None,
    at: datetime,
    fingerprints: Iterable[str],
    attempt: int = 0,
) -> IncidentId:
    seed = "|".join([scope.key, at.isoformat(), *sorted(fingerprints), str(attempt)])
    digest = hashlib.sha256(seed.encode()).hexdigest()
    suffix = digest[: 4 + 2 * attempt]
    return IncidentId(f"INC-{at:%Y%m%d}-{slug(service or scope.namespace)}-{suffix}")
