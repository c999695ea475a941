"""Every record (`storage.records`) carries exactly its table's columns, with the same defaults:
a column added to a table and forgotten in its record would be dropped on the way out (or fail
on the way in), so this fails first."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic_core import PydanticUndefined
from sqlmodel import SQLModel

from storage import records, tables

PAIRS: list[tuple[type[Any], type[SQLModel]]] = [
    (records.StoredIncident, tables.IncidentRow),
    (records.StoredAlert, tables.IncidentAlertRow),
    (records.StoredTimelineEvent, tables.TimelineEventRow),
    (records.StoredDiagnosis, tables.DiagnosisRow),
    (records.StoredSlackMessage, tables.SlackMessageRow),
    (records.StoredPlan, tables.PlanRow),
    (records.StoredApproval, tables.ApprovalRow),
    (records.StoredTransaction, tables.TransactionRow),
    (records.StoredUndoEntry, tables.UndoEntryRow),
    (records.StoredAudit, tables.AuditRow),
    (records.StoredJournalEntry, tables.JournalEntryRow),
]
#: Tables whose rows never leave storage: their repositories hand out other values.
INTERNAL = {tables.InboxRow, tables.UndoRequestRow, tables.WriterLockRow}

_REQUIRED = object()


def _record_defaults(kind: type[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(kind):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
        else:
            out[f.name] = _REQUIRED
    return out


def _row_defaults(model: type[SQLModel]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if info.default_factory is not None:
            out[name] = info.default_factory()  # type: ignore[call-arg]
        elif info.default is PydanticUndefined or info.default is Ellipsis:
            out[name] = _REQUIRED
        else:
            out[name] = info.default
    return out


@pytest.mark.parametrize(("kind", "model"), PAIRS, ids=[m.__name__ for _, m in PAIRS])
def test_a_record_has_its_tables_columns_and_defaults(
    kind: type[Any], model: type[SQLModel]
) -> None:
    assert _record_defaults(kind) == _row_defaults(model)


def test_every_table_that_leaves_storage_has_a_record() -> None:
    exported = {getattr(tables, name) for name in tables.__all__}
    models = {m for m in exported if isinstance(m, type) and issubclass(m, SQLModel)}
    assert models - INTERNAL == {model for _, model in PAIRS}


def test_the_check_tells_a_missing_column() -> None:
    @dataclasses.dataclass(kw_only=True)
    class Short:
        id: str

    assert _record_defaults(Short) != _row_defaults(tables.ApprovalRow)
