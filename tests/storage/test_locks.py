"""WriterLocks, one process: acquisition, extension, expiry and takeover, renewal, release,
fencing tokens that never go back, and the database's clock."""

from __future__ import annotations

import time

import pytest

from storage import LockNotHeld, StaleToken, Store
from tests.storage.conftest import at

SCOPE = "lab/hotel"


def test_acquire_free_scope_gets_token_1(store: Store) -> None:
    lease = store.locks.acquire(SCOPE, "a", 30, now=at(0))
    assert lease is not None
    assert (lease.holder, lease.token, lease.acquired_at, lease.expires_at) == (
        "a",
        1,
        at(0),
        at(30),
    )
    assert store.locks.check(SCOPE, 1, now=at(10)) == lease
    current = store.locks.current(SCOPE, now=at(10))
    assert current is not None and current.holder == "a"


def test_someone_else_waits_until_expiry_then_takes_over(store: Store) -> None:
    store.locks.acquire(SCOPE, "a", 30, now=at(0))
    assert store.locks.acquire(SCOPE, "b", 30, now=at(29)) is None
    taken = store.locks.acquire(SCOPE, "b", 30, now=at(30))
    assert taken is not None and (taken.holder, taken.token) == ("b", 2)

    # a's token is now stale for every operation.
    with pytest.raises(StaleToken, match="superseded by token 2"):
        store.locks.assert_current(SCOPE, 1, now=at(31))
    with pytest.raises(StaleToken):
        store.locks.renew(SCOPE, "a", 1, 30, now=at(31))
    assert store.locks.release(SCOPE, "a", 1, now=at(31)) is None
    store.locks.assert_current(SCOPE, 2, now=at(31))


def test_acquire_by_the_holder_extends_and_keeps_the_token(store: Store) -> None:
    store.locks.acquire(SCOPE, "a", 30, now=at(0))
    again = store.locks.acquire(SCOPE, "a", 30, now=at(20))
    assert again is not None and (again.token, again.acquired_at, again.expires_at) == (
        1,
        at(0),
        at(50),
    )


def test_renew_extends_only_an_unexpired_lease(store: Store) -> None:
    store.locks.acquire(SCOPE, "a", 30, now=at(0))
    renewed = store.locks.renew(SCOPE, "a", 1, 30, now=at(25))
    assert (renewed.renewed_at, renewed.expires_at) == (at(25), at(55))
    store.locks.assert_current(SCOPE, 1, now=at(54))
    with pytest.raises(StaleToken, match="expired"):
        store.locks.assert_current(SCOPE, 1, now=at(55))
    with pytest.raises(StaleToken, match="expired"):
        store.locks.renew(SCOPE, "a", 1, 30, now=at(56))
    with pytest.raises(StaleToken, match="held by a, not b"):
        store.locks.renew(SCOPE, "b", 1, 30, now=at(40))
    with pytest.raises(LockNotHeld):  # StaleToken is a LockNotHeld
        store.locks.renew("lab/none", "a", 1, 30, now=at(40))


def test_min_remaining_refuses_a_lease_about_to_expire(store: Store) -> None:
    store.locks.acquire(SCOPE, "a", 30, now=at(0))
    store.locks.assert_current(SCOPE, 1, now=at(20), min_remaining_s=5)
    with pytest.raises(StaleToken):
        store.locks.assert_current(SCOPE, 1, now=at(26), min_remaining_s=5)


def test_tokens_never_go_back_across_release(store: Store) -> None:
    tokens = []
    for n in range(4):
        lease = store.locks.acquire(SCOPE, "a" if n % 2 else "b", 30, now=at(n * 10))
        assert lease is not None
        tokens.append(lease.token)
        released = store.locks.release(SCOPE, lease.holder, lease.token, now=at(n * 10 + 1))
        assert released is not None and released.expires_at == at(n * 10 + 1)
        assert store.locks.current(SCOPE, now=at(n * 10 + 1)) is None
        with pytest.raises(StaleToken):
            store.locks.assert_current(SCOPE, lease.token, now=at(n * 10 + 1))
    assert tokens == [1, 2, 3, 4]


def test_scopes_are_independent(store: Store) -> None:
    a = store.locks.acquire("lab/hotel", "a", 30, now=at(0))
    b = store.locks.acquire("lab/shop", "b", 30, now=at(0))
    assert a is not None and b is not None and a.token == b.token == 1
    with pytest.raises(StaleToken, match="no lease"):
        store.locks.assert_current("lab/none", 1, now=at(0))


def test_ttl_must_be_positive_and_now_aware(store: Store) -> None:
    with pytest.raises(ValueError, match="ttl_s"):
        store.locks.acquire(SCOPE, "a", 0)
    with pytest.raises(ValueError, match="naive"):
        store.locks.acquire(SCOPE, "a", 30, now=at(0).replace(tzinfo=None))


def test_database_clock(store: Store) -> None:
    # Without `now` the database's clock decides (PostgreSQL's, or the host's on SQLite).
    lease = store.locks.acquire(SCOPE, "a", 60)
    assert lease is not None
    store.locks.assert_current(SCOPE, lease.token)
    assert store.locks.acquire(SCOPE, "b", 60) is None
    assert store.locks.release(SCOPE, "a", lease.token)

    short = store.locks.acquire(SCOPE, "a", 0.05)
    assert short is not None and short.token == 2
    time.sleep(0.1)
    with pytest.raises(StaleToken, match="expired"):
        store.locks.assert_current(SCOPE, short.token)
    taken = store.locks.acquire(SCOPE, "b", 60)
    assert taken is not None and taken.token == 3
    assert taken.acquired_at >= short.expires_at
