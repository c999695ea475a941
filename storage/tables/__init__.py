"""The SQLModel tables. `SQLModel.metadata` (re-exported as `metadata`) is what migrations
must produce; a test compares the two on both databases."""

from storage.tables.base import metadata
from storage.tables.incidents import (
    DiagnosisRow,
    IncidentAlertRow,
    IncidentRow,
    SlackMessageRow,
    TimelineEventRow,
)
from storage.tables.plans import ApprovalRow, PlanRow
from storage.tables.records import (
    SCHEDULER_JOBS_TABLE,
    AuditRow,
    InboxRow,
    JournalEntryRow,
    UndoRequestRow,
)
from storage.tables.transactions import TransactionRow, UndoEntryRow, WriterLockRow

__all__ = [
    "SCHEDULER_JOBS_TABLE",
    "ApprovalRow",
    "AuditRow",
    "DiagnosisRow",
    "InboxRow",
    "IncidentAlertRow",
    "IncidentRow",
    "JournalEntryRow",
    "PlanRow",
    "SlackMessageRow",
    "TimelineEventRow",
    "TransactionRow",
    "UndoEntryRow",
    "UndoRequestRow",
    "WriterLockRow",
    "metadata",
]
