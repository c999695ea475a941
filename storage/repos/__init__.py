"""Repositories: the only code that opens sessions and runs queries. Each method is one
database transaction and returns detached rows (or frozen values), never a live session."""

from storage.repos.approvals import ApprovalRepository
from storage.repos.audit import AuditRepository
from storage.repos.diagnoses import DiagnosisRepository
from storage.repos.inbox import InboxRepository
from storage.repos.incidents import IncidentRepository
from storage.repos.journal import JournalRepository
from storage.repos.plans import PlanRepository
from storage.repos.slack import SlackMessageRepository
from storage.repos.transactions import TransactionRepository
from storage.repos.undo import ObjectKey, UndoRepository
from storage.repos.undo_requests import UndoRequest, UndoRequestRepository

__all__ = [
    "ApprovalRepository",
    "AuditRepository",
    "DiagnosisRepository",
    "InboxRepository",
    "IncidentRepository",
    "JournalRepository",
    "ObjectKey",
    "PlanRepository",
    "SlackMessageRepository",
    "TransactionRepository",
    "UndoRepository",
    "UndoRequest",
    "UndoRequestRepository",
]
