"""Shared pieces of the table definitions.

Constraint and index names follow one convention so that the migrations name them exactly as
the models do; a migration that drops or alters a constraint can then refer to it by name on
both databases.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Field, SQLModel

from storage.types import JsonType, UTCDateTime

SQLModel.metadata.naming_convention = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = SQLModel.metadata


def utc_field(*, nullable: bool = False, index: bool = False) -> Any:
    """A timezone-aware UTC timestamp column. No default: the caller's clock (possibly the
    lab's) decides what "now" is, never the storage layer."""
    return Field(
        default=None if nullable else ...,
        sa_type=UTCDateTime,
        nullable=nullable,
        index=index,
    )


def json_field(*, nullable: bool = False, list_default: bool = False) -> Any:
    """A JSON document column (JSONB on PostgreSQL)."""
    if nullable:
        return Field(default=None, sa_type=JsonType, nullable=True)
    return Field(default_factory=list if list_default else dict, sa_type=JsonType, nullable=False)
