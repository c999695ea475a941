"""The lease as recovery reads it (`last`, expired or not), and lease statements that cannot
hang: on PostgreSQL a row lock held by a stuck session makes a renewal fail as `Unavailable`
after `LEASE_STATEMENT_TIMEOUT_S`, instead of blocking the heartbeat for ever."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from storage import Store
from storage.errors import Unavailable
from storage.locks import LEASE_STATEMENT_TIMEOUT_S
from tests.storage.conftest import at

SCOPE = "lab/hotel"


def test_last_is_the_lease_as_it_stands_expired_or_not(store: Store) -> None:
    assert store.locks.last(SCOPE) is None  # never granted
    store.locks.acquire(SCOPE, "a#1", 30, now=at(0))
    store.locks.renew(SCOPE, "a#1", 1, 30, now=at(10))
    # Long expired: `current` has nothing, `last` still says who held it and when it renewed.
    assert store.locks.current(SCOPE, now=at(100)) is None
    last = store.locks.last(SCOPE)
    assert last is not None
    assert (last.holder, last.token, last.renewed_at, last.expires_at) == (
        "a#1",
        1,
        at(10),
        at(40),
    )


@pytest.mark.postgres
@pytest.mark.timeout(120)
@pytest.mark.parametrize("empty_url", ["postgresql"], indirect=True)
def test_a_renewal_behind_a_stuck_row_lock_fails_instead_of_hanging(store: Store) -> None:
    lease = store.locks.acquire(SCOPE, "a#1", 60)
    assert lease is not None
    with store.db.engine.connect() as stuck:
        stuck.execute(
            text("SELECT token FROM writer_locks WHERE scope = :scope FOR UPDATE"),
            {"scope": SCOPE},
        )  # a session that took the row and never ends its transaction
        with pytest.raises(Unavailable):
            store.locks.renew(SCOPE, "a#1", lease.token, 60)
        stuck.rollback()
    assert LEASE_STATEMENT_TIMEOUT_S < 60 / 3
    store.locks.renew(SCOPE, "a#1", lease.token, 60)  # free again
