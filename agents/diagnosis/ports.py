"""What diagnosis needs from its neighbours, as small Protocols of its own.

The change journal, the similar-incident search and the redactor are written elsewhere; the
diagnoser codes against these capabilities so that it neither waits for nor imports their
implementations. The composition root passes the real ones (`agents.journal`,
`agents.similar.search`, `agents.redact.redact`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from agents.model import Change, IncidentId, JsonObject, Scope, SimilarIncident


class JournalView(Protocol):
    """Read side of the change journal: who changed what, and the values before."""

    def changes(
        self,
        scope: Scope,
        since: datetime,
        until: datetime,
        kinds: Sequence[str] | None = None,
    ) -> list[Change]: ...

    def last_known_good(
        self, scope: Scope, kind: str, name: str, before: datetime
    ) -> JsonObject | None: ...


class SimilarSearch(Protocol):
    """Closed incidents that look like a text (a title plus the strongest evidence)."""

    def search(
        self, text: str, *, exclude: IncidentId | None = None, limit: int = 3
    ) -> list[SimilarIncident]: ...


class Redactor(Protocol):
    """Removes secrets from text before it reaches evidence, a prompt or a message."""

    def __call__(self, text: str) -> str: ...
