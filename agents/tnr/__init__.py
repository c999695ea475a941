"""The Transactional No-Regression engine: write-ahead undo, writer lock with fencing,
validation, abort, undo after commit and crash recovery (DESIGN section 3)."""

from agents.tnr.engine import (
    DryRunFailed,
    EngineOptions,
    OpenTransaction,
    Progress,
    Step,
    TransactionEngine,
    TransactionRequest,
    ValidationVerdict,
    verdict,
)
from agents.tnr.limits import TnrLimits
from agents.tnr.lock import LockBusy, WriterLock
from agents.tnr.preview import PreviewedAction, preview
from agents.tnr.recovery import Recovered, recover
from agents.tnr.undo import Undoer, UndoResult, UndoStatus

__all__ = [
    "DryRunFailed",
    "EngineOptions",
    "LockBusy",
    "OpenTransaction",
    "PreviewedAction",
    "Progress",
    "Recovered",
    "Step",
    "TnrLimits",
    "TransactionEngine",
    "TransactionRequest",
    "UndoResult",
    "UndoStatus",
    "Undoer",
    "ValidationVerdict",
    "WriterLock",
    "preview",
    "recover",
    "verdict",
]
