"""A migrated SQLite store seeded with a day of incidents, timelines, alerts, transactions'
audit records and plans, at fixed instants (the digest is a pure function of storage)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storage import Store
from storage.migrations import upgrade
from storage.records import (
    StoredAlert,
    StoredAudit,
    StoredIncident,
    StoredPlan,
    StoredTimelineEvent,
)

T0 = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)  # the period is [T0, T0 + 24 h)
END = T0 + timedelta(hours=24)
HOTEL, SHOP = "hotel-reservation", "online-shop"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'stratus.db'}"
    upgrade(url)
    store = Store.connect(url)
    yield store
    store.close()


def incident(
    store: Store,
    iid: str,
    namespace: str,
    *,
    opened: datetime,
    states: list[tuple[str, datetime]],
    alert_start: datetime | None = None,
    source: str = "alertmanager",
    mu: float = 2.0,
    cluster: str = "lab",
) -> None:
    """An incident opened at `opened` that went through `states` (the last one is where it is;
    "closed" closes it)."""
    store.incidents.create(
        StoredIncident(
            id=iid,
            title=f"{iid} title",
            cluster=cluster,
            namespace=namespace,
            state="detected",
            source=source,
            mu0=4.0,
            mu=mu,
            opened_at=opened,
            updated_at=opened,
            group_key=f"{cluster}/{namespace}/{iid}",
        ),
        alerts=[]
        if alert_start is None
        else [
            StoredAlert(
                incident_id=iid,
                fingerprint=f"fp-{iid}",
                alertname="ServiceErrors",
                status="firing",
                labels={"namespace": namespace},
                annotations={},
                starts_at=alert_start,
                first_seen=opened,
                last_seen=opened,
            )
        ],
        events=[
            StoredTimelineEvent(
                incident_id=iid, at=opened, state="detected", kind="transition", message="Detected"
            )
        ],
    )
    previous = "detected"
    for state, when in states:
        if state == "closed":
            assert store.incidents.close(iid, at=when, message="Closed", expected=previous)
        else:
            assert store.incidents.transition(iid, state, at=when, message=state, expected=previous)
        previous = state


def audit(store: Store, verb: str, tx: str, namespace: str, when: datetime) -> None:
    store.audit.append(
        StoredAudit(
            at=when, actor="stratus", verb=verb, transaction_id=tx, scope=f"lab/{namespace}"
        )
    )


def plan(store: Store, plan_id: str, incident_id: str, *, expires: datetime) -> None:
    store.plans.create(
        StoredPlan(
            id=plan_id,
            incident_id=incident_id,
            status="proposed",
            risk="low",
            content_hash="h",
            created_at=expires - timedelta(minutes=15),
            expires_at=expires,
        )
    )


@pytest.fixture
def seeded(store: Store) -> Store:
    # Opened in the period, detected 60 s after its alert began, resolved 10 min after opening.
    incident(
        store,
        "INC-A",
        HOTEL,
        opened=at(60),
        alert_start=at(59),
        states=[("diagnosing", at(61)), ("resolved", at(70)), ("closed", at(80))],
    )
    # Opened the day before, resolved in the period 30 min after it opened.
    incident(
        store,
        "INC-B",
        HOTEL,
        opened=T0 - timedelta(minutes=20),
        alert_start=T0 - timedelta(minutes=22),
        states=[("resolved", at(10)), ("closed", at(15))],
    )
    # Still executing, the worst μ of the namespace.
    incident(
        store,
        "INC-C",
        HOTEL,
        opened=at(600),
        alert_start=at(598),
        mu=5.0,
        states=[("executing", at(605))],
    )
    # Waiting for approval: one live plan, one expired before the end of the period.
    incident(
        store,
        "INC-D",
        HOTEL,
        opened=at(700),
        alert_start=at(699),
        mu=1.0,
        states=[("awaiting_approval", at(702))],
    )
    plan(store, "plan-live", "INC-D", expires=END + timedelta(minutes=5))
    plan(store, "plan-stale", "INC-D", expires=END - timedelta(minutes=5))
    # Declared by a person in the shop, escalated: no time to detect.
    incident(
        store,
        "INC-E",
        SHOP,
        opened=at(120),
        source="declared",
        states=[("escalated", at(130)), ("closed", at(140))],
    )
    # Another cluster: never in this digest.
    incident(store, "INC-X", HOTEL, opened=at(30), alert_start=at(29), cluster="other", states=[])
    # Transactions: committed then undone in the period, one rolled back, one whose rollback
    # could not restore μ, one committed the day before.
    audit(store, "commit", "tx-1", HOTEL, at(66))
    audit(store, "undone", "tx-1", HOTEL, at(90))
    audit(store, "aborted", "tx-2", HOTEL, at(620))
    audit(store, "escalate", "tx-3", SHOP, at(125))
    audit(store, "commit", "tx-0", HOTEL, T0 - timedelta(hours=3))
    audit(store, "write", "tx-1", HOTEL, at(65))  # not a verb the digest counts
    return store
