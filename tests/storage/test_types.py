"""Timestamps and JSON behave the same on both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from storage import Database, Store
from storage.errors import StorageError
from storage.records import StoredAudit, StoredJournalEntry
from tests.storage.conftest import T0


def test_timestamps_come_back_aware_in_utc(store: Store) -> None:
    cet = timezone(timedelta(hours=1))
    written = datetime(2026, 1, 5, 10, 30, 15, 123456, tzinfo=cet)
    store.audit.append(StoredAudit(at=written, actor="t", verb="alert"))

    (row,) = store.audit.query()
    assert row.at == written
    assert row.at.tzinfo is not None and row.at.utcoffset() == timedelta(0)
    assert row.at == datetime(2026, 1, 5, 9, 30, 15, 123456, tzinfo=UTC)


def test_time_windows_compare_instants_not_text(store: Store) -> None:
    # 08:59:59 in UTC-05:00 is 13:59:59 UTC, after T0 (09:00 UTC) although "08" < "09".
    later = datetime(2026, 1, 5, 8, 59, 59, tzinfo=timezone(timedelta(hours=-5)))
    store.audit.append(StoredAudit(at=later, actor="t", verb="alert"))
    assert len(store.audit.query(since=T0)) == 1
    assert store.audit.query(until=T0) == []


def test_naive_datetimes_are_refused(store: Store) -> None:
    with pytest.raises(StorageError, match="naive datetime"):
        store.audit.append(StoredAudit(at=datetime(2026, 1, 5, 9), actor="t", verb="alert"))
    assert store.audit.query() == []


def test_json_round_trips_and_none_is_sql_null(store: Store, db: Database) -> None:
    document = {"spec": {"replicas": 3, "ratio": 0.5, "on": True, "tags": ["a", "ü", None]}}
    store.journal.append(
        StoredJournalEntry(
            cluster="c",
            namespace="n",
            kind="Deployment",
            name="web",
            at=T0,
            change_type="MODIFIED",
            diff={"spec.replicas": [1, 3]},
            object=document,
        )
    )
    store.journal.append(
        StoredJournalEntry(
            cluster="c",
            namespace="n",
            kind="Deployment",
            name="web",
            at=T0 + timedelta(seconds=1),
            change_type="DELETED",
            diff={},
            object=None,
        )
    )
    first, deleted = store.journal.query("c", "n")
    assert first.object == document
    assert first.diff == {"spec.replicas": [1, 3]}
    assert deleted.object is None
    # SQL NULL (not the JSON literal null): last_known_good filters with IS NOT NULL.
    good = store.journal.last_known_good("c", "n", "Deployment", "web", before=T0 + timedelta(1))
    assert good is not None and good.id == first.id
