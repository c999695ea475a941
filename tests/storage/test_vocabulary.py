"""Storage's copies of the agents' state names still match the agents' enums."""

from __future__ import annotations

from agents.model import IncidentState, TransactionStatus, UndoState
from storage import vocabulary as v


def test_state_names_match_the_agents_enums() -> None:
    assert IncidentState.CLOSED.value == v.INCIDENT_CLOSED
    assert TransactionStatus.COMMITTED.value == v.TRANSACTION_COMMITTED
    assert set(v.TRANSACTION_INTERRUPTED) == {
        s.value
        for s in (
            TransactionStatus.OPEN,
            TransactionStatus.VALIDATING,
            TransactionStatus.ABORTING,
            TransactionStatus.UNDOING,
        )
    }
    undo = (v.UNDO_PENDING, v.UNDO_APPLIED, v.UNDO_RESTORED, v.UNDO_SKIPPED)
    assert undo == tuple(s.value for s in UndoState)
