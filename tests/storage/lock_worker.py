"""A lock contender, run in its own process (spawned) by test_lock_contention.

It loops until its deadline: acquire the scope's lease (a new holder name each time), hold it
for a while renewing it, then release it — or, on some acquisitions, stop renewing on purpose
and wait until someone else has taken the lease over, then present the old token, which must
be refused. Every outcome is recorded with the lease times the database handed out, and
written as JSON for the test to audit.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage import Lease, StaleToken, Store


@dataclass(frozen=True)
class Plan:
    url: str
    scope: str
    worker: str
    duration_s: float
    ttl_s: float
    hold_s: tuple[float, float]
    abandon_ratio: float
    seed: int
    out: str
    #: Abandon the first lease whatever the dice say, so every run has a takeover to check
    #: (on a slow machine a few seconds may hold too few acquisitions for the ratio to hit).
    abandon_first: bool = False


def _lease(op: str, lease: Lease) -> dict[str, Any]:
    return {
        "op": op,
        "holder": lease.holder,
        "token": lease.token,
        "acquired_at": lease.acquired_at.isoformat(),
        "expires_at": lease.expires_at.isoformat(),
        "wall": time.time(),
    }


def run(plan: Plan, barrier: Any) -> None:
    store = Store.connect(plan.url)
    rng = random.Random(plan.seed)
    events: list[dict[str, Any]] = []
    try:
        barrier.wait(timeout=90)
        deadline = time.monotonic() + plan.duration_s
        attempt = 0
        while time.monotonic() < deadline:
            attempt += 1
            holder = f"{plan.worker}#{attempt}"
            lease = store.locks.acquire(plan.scope, holder, plan.ttl_s)
            if lease is None:
                time.sleep(rng.uniform(0.005, 0.03))
                continue
            events.append(_lease("acquire", lease))
            first = plan.abandon_first and not any(e["op"] == "abandon" for e in events)
            if rng.random() < plan.abandon_ratio or first:
                _abandon(store, plan, lease, events, deadline)
            else:
                _hold(store, plan, lease, events, rng)
    finally:
        Path(plan.out).write_text(json.dumps(events), encoding="utf-8")
        store.close()


def _hold(
    store: Store, plan: Plan, lease: Lease, events: list[dict[str, Any]], rng: random.Random
) -> None:
    until = time.monotonic() + rng.uniform(*plan.hold_s)
    while time.monotonic() < until:
        time.sleep(min(plan.ttl_s / 4, max(0.0, until - time.monotonic())))
        try:
            lease = store.locks.renew(plan.scope, lease.holder, lease.token, plan.ttl_s)
        except StaleToken as e:
            # The process was too slow to renew in time: the lease is gone, stop here.
            events.append({"op": "lost", "token": lease.token, "reason": e.reason})
            return
        events.append(_lease("renew", lease))
    released = store.locks.release(plan.scope, lease.holder, lease.token)
    if released is None:
        events.append({"op": "lost", "token": lease.token, "reason": "expired before release"})
    else:
        events.append(_lease("release", released))


def _abandon(
    store: Store, plan: Plan, lease: Lease, events: list[dict[str, Any]], deadline: float
) -> None:
    """Stop renewing, as a stalled process would, then come back with the old token."""
    events.append({"op": "abandon", "token": lease.token})
    successor = None
    while time.monotonic() < deadline + 2 * plan.ttl_s:
        current = store.locks.current(plan.scope)
        if current is not None and current.token > lease.token:
            successor = current.token
            break
        time.sleep(0.02)
    outcome: dict[str, Any] = {"op": "stale_check", "token": lease.token, "successor": successor}
    try:
        store.locks.assert_current(plan.scope, lease.token)
        outcome["refused"] = False
    except StaleToken as e:
        outcome["refused"] = True
        outcome["reason"] = e.reason
    try:
        store.locks.renew(plan.scope, lease.holder, lease.token, plan.ttl_s)
        outcome["renew_refused"] = False
    except StaleToken:
        outcome["renew_refused"] = True
    outcome["release_refused"] = store.locks.release(plan.scope, lease.holder, lease.token) is None
    events.append(outcome)
