"""What every repository shares: the database handle, mapping records (`storage.records`) to
rows and back, and the dialect-specific INSERT that both databases support for upserts."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from dataclasses import fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import SQLModel, col, update

from storage.db import Database
from storage.errors import NotFound

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

RowT = TypeVar("RowT", bound=SQLModel)
RecordT = TypeVar("RecordT", bound="DataclassInstance")

Upsert = postgresql.Insert | sqlite.Insert

logger = logging.getLogger(__name__)


class Repository:
    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def db(self) -> Database:
        return self._db

    def _add(self, record: RecordT, model: type[SQLModel]) -> RecordT:
        """Insert `record` as a new row: the stored record, ids and defaults filled in."""
        row = row_of(record, model)
        with self._db.write() as s:
            s.add(row)
            s.flush()
            return record_of(row, type(record))

    def _fetch(self, model: type[SQLModel], key: object, kind: type[RecordT], what: str) -> RecordT:
        """The record with primary key `key`. Raises `NotFound` naming `what`."""
        with self._db.read() as s:
            row = s.get(model, key)
        if row is None:
            raise NotFound(what)
        return record_of(row, kind)

    def _all(self, query: Any, kind: type[RecordT]) -> list[RecordT]:
        """The records of every row `query` selects, in its order."""
        with self._db.read() as s:
            return records_of(s.exec(query), kind)

    def _set_status(
        self,
        model: type[SQLModel],
        key: str,
        values: dict[str, Any],
        expected: str | Collection[str] | None,
        what: str,
    ) -> bool:
        """Compare-and-set: write `values` (a new `status` among them) to the row with id
        `key` if its status is still one of `expected` (any, when None). False when it moved
        on; exactly one of several concurrent callers wins. Raises `NotFound` naming `what`."""
        table = table_of(model)
        with self._db.write() as s:
            statement = update(table).where(table.c.id == key)
            if expected is not None:
                statement = statement.where(table.c.status.in_(as_tuple(expected)))
            if s.exec(statement.values(**values)).rowcount == 1:
                return True
            current = s.get(model, key)
            if current is None:
                raise NotFound(what)
            logger.info(
                "%s: not set to %s, it is %s (expected %s)",
                what,
                values["status"],
                current.model_dump()["status"],
                expected,
            )
            return False

    def _insert(self, model: type[SQLModel]) -> Upsert:
        """An INSERT with `on_conflict_do_nothing` / `on_conflict_do_update`."""
        table = table_of(model)
        if self._db.dialect == "postgresql":
            return postgresql.insert(table)
        return sqlite.insert(table)


def table_of(model: type[SQLModel]) -> Table:
    return cast(Table, model.__table__)  # type: ignore[attr-defined]


def row_of(record: DataclassInstance, model: type[RowT]) -> RowT:
    """A new, transient row holding `record`: what gets inserted. The caller's record is never
    attached to a session, so reusing it (say, inserting it twice) behaves predictably."""
    return model(**{f.name: getattr(record, f.name) for f in fields(record)})


def record_of(row: SQLModel, kind: type[RecordT], **extra: Any) -> RecordT:
    """The record of a row read or written in a session (the row is left behind); `extra`
    gives the fields the row has no column for."""
    columns = {f.name: getattr(row, f.name) for f in fields(kind) if f.name not in extra}
    return kind(**columns, **extra)


def records_of(rows: Iterable[RowT], kind: type[RecordT]) -> list[RecordT]:
    return [record_of(row, kind) for row in rows]


def values_of(record: DataclassInstance, *, exclude: Collection[str] = ()) -> dict[str, Any]:
    """Column values for a Core INSERT (autoincrement ids left out when unset)."""
    data = {f.name: getattr(record, f.name) for f in fields(record) if f.name not in exclude}
    if data.get("id", 0) is None:
        del data["id"]
    return data


QueryT = TypeVar("QueryT", bound=Any)


def narrowed(
    query: QueryT,
    model: type[SQLModel],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    at: str = "at",
    **equal: object,
) -> QueryT:
    """`query` with a condition for each column of `equal` whose value is given (not None),
    and the time column `at` from `since` (inclusive) to `until` (exclusive)."""
    for name, value in equal.items():
        if value is not None:
            query = query.where(col(getattr(model, name)) == value)
    if since is not None:
        query = query.where(col(getattr(model, at)) >= since)
    if until is not None:
        query = query.where(col(getattr(model, at)) < until)
    return query


def as_tuple(value: str | Collection[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def given(**values: Any) -> dict[str, Any]:
    """The keyword arguments that were given (not None): the columns an update changes."""
    return {k: v for k, v in values.items() if v is not None}
