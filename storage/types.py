"""Column types that behave the same on SQLite and PostgreSQL.

* `UTCDateTime`: every timestamp goes in timezone-aware and comes out timezone-aware in UTC.
  PostgreSQL stores `timestamptz`; SQLite has no time zones, so the value is stored as naive
  UTC text (fixed width, so string comparison is time order) and marked UTC again on the way
  out. A naive datetime is refused rather than guessed at: a wrong guess would silently shift
  lease expiries and time windows by hours.
* `JsonDocument`: JSON documents. JSONB on PostgreSQL (compact, comparable), JSON text on
  SQLite. `None` is stored as SQL NULL, not as the JSON literal `null`, so `IS NULL` finds it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine


class UTCDateTime(TypeDecorator[datetime]):
    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()} (use a timezone-aware UTC one)")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class JsonDocument(TypeDecorator[Any]):
    """A JSON document: JSONB on PostgreSQL, JSON text on SQLite.

    The value is checked before it reaches the driver, so that a document JSON cannot hold
    (a datetime, NaN — which JSONB refuses and SQLite would accept) fails the same way on both
    databases, as a `StorageError` of the write, which then rolls back.
    """

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(JSONB(none_as_null=True))
        return dialect.type_descriptor(JSON(none_as_null=True))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is not None:
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"not a JSON document: {e}") from e
        return value


JsonType = JsonDocument
