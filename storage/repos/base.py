"""What every repository shares: the database handle, copying rows in and out, and the
dialect-specific INSERT that both databases support for upserts."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar, cast

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import SQLModel

from storage.db import Database

RowT = TypeVar("RowT", bound=SQLModel)

Upsert = postgresql.Insert | sqlite.Insert


class Repository:
    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def db(self) -> Database:
        return self._db

    def _insert(self, model: type[SQLModel]) -> Upsert:
        """An INSERT with `on_conflict_do_nothing` / `on_conflict_do_update`."""
        table = table_of(model)
        if self._db.dialect == "postgresql":
            return postgresql.insert(table)
        return sqlite.insert(table)


def table_of(model: type[SQLModel]) -> Table:
    return cast(Table, model.__table__)  # type: ignore[attr-defined]


def fresh(row: RowT) -> RowT:
    """A new, transient copy of `row`: what gets inserted. The caller's object is never
    attached to a session, so reusing it (say, inserting it twice) behaves predictably."""
    return type(row)(**row.model_dump())


def values_of(row: SQLModel, *, exclude: Collection[str] = ()) -> dict[str, Any]:
    """Column values for a Core INSERT (autoincrement ids left out when unset)."""
    data = row.model_dump(exclude=set(exclude))
    if data.get("id", 0) is None:
        del data["id"]
    return data


def as_tuple(value: str | Collection[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def given(**values: Any) -> dict[str, Any]:
    """The keyword arguments that were given (not None): the columns an update changes."""
    return {k: v for k, v in values.items() if v is not None}
