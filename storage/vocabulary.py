"""The few state names that storage queries by.

They mirror the `StrEnum`s of `agents.model` (a test checks that they still match): storage is
the bottom layer and cannot import the agents, but `list_open` must know which state is
closed, and `list_interrupted` which transaction statuses a restart has to resume.
"""

from __future__ import annotations

from typing import Final

INCIDENT_CLOSED: Final = "closed"

TRANSACTION_COMMITTED: Final = "committed"
#: A transaction in one of these was cut short by a crash or restart: resume or roll back.
TRANSACTION_INTERRUPTED: Final = ("open", "validating", "aborting", "undoing")

UNDO_PENDING: Final = "pending"
UNDO_APPLIED: Final = "applied"
UNDO_RESTORED: Final = "restored"
UNDO_SKIPPED: Final = "skipped"
