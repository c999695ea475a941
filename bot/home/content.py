"""What one person's App Home shows, read from storage: the open incidents, the plans waiting
for *them* (their user id or one of their groups is an approver, and they have not approved
yet), and the latest committed transactions, which can still be undone."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agents.incident.approvals import Person
from agents.tnr.records import TransactionRecord
from bot.commands import reads
from bot.commands.context import CommandContext
from bot.commands.reads import IncidentCard, PendingApproval

INCIDENTS_SHOWN = 15
APPROVALS_SHOWN = 10
TRANSACTIONS_SHOWN = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class HomeContent:
    viewer: Person
    at: datetime
    incidents: tuple[IncidentCard, ...]
    more_incidents: int
    waiting: tuple[PendingApproval, ...]
    transactions: tuple[TransactionRecord, ...]
    notice: str = ""  # one line on top, e.g. the result of the last refresh


def home_content(ctx: CommandContext, viewer: Person, *, notice: str = "") -> HomeContent:
    incidents = reads.open_incidents(ctx)
    waiting = reads.waiting_for(viewer, reads.pending_approvals(ctx))
    return HomeContent(
        viewer=viewer,
        at=ctx.brain.clock.now(),
        incidents=tuple(reads.incident_cards(ctx, incidents[:INCIDENTS_SHOWN])),
        more_incidents=max(0, len(incidents) - INCIDENTS_SHOWN),
        waiting=tuple(waiting[:APPROVALS_SHOWN]),
        transactions=tuple(reads.recent_transactions(ctx, TRANSACTIONS_SHOWN)),
        notice=notice,
    )
