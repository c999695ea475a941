"""`Store`: every repository and the writer lock over one `Database`, the one object the
composition root builds and hands to the agents."""

from __future__ import annotations

from dataclasses import dataclass

from storage.db import Database
from storage.locks import WriterLocks
from storage.repos import (
    ApprovalRepository,
    AuditRepository,
    DiagnosisRepository,
    InboxRepository,
    IncidentRepository,
    JournalRepository,
    PlanRepository,
    SlackMessageRepository,
    TransactionRepository,
    UndoRepository,
    UndoRequestRepository,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Store:
    db: Database
    incidents: IncidentRepository
    diagnoses: DiagnosisRepository
    plans: PlanRepository
    approvals: ApprovalRepository
    transactions: TransactionRepository
    undo: UndoRepository
    audit: AuditRepository
    journal: JournalRepository
    slack_messages: SlackMessageRepository
    inbox: InboxRepository
    undo_requests: UndoRequestRepository
    locks: WriterLocks

    @classmethod
    def over(cls, db: Database) -> Store:
        return cls(
            db=db,
            incidents=IncidentRepository(db),
            diagnoses=DiagnosisRepository(db),
            plans=PlanRepository(db),
            approvals=ApprovalRepository(db),
            transactions=TransactionRepository(db),
            undo=UndoRepository(db),
            audit=AuditRepository(db),
            journal=JournalRepository(db),
            slack_messages=SlackMessageRepository(db),
            inbox=InboxRepository(db),
            undo_requests=UndoRequestRepository(db),
            locks=WriterLocks(db),
        )

    @classmethod
    def connect(cls, url: str) -> Store:
        """Open the database at `url` (it must be migrated: `storage.migrations.upgrade`)."""
        return cls.over(Database.connect(url))

    def close(self) -> None:
        self.db.close()
