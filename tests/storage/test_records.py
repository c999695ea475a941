"""AuditRepository, JournalRepository and SlackMessageRepository."""

from __future__ import annotations

from typing import Any

import pytest

from storage import NotFound, Store
from storage.records import AuditVerb, StoredAudit, StoredJournalEntry, StoredSlackMessage
from tests.storage import rows
from tests.storage.conftest import at


def test_audit_append_and_filters(store: Store) -> None:
    store.audit.append_many(
        [
            StoredAudit(
                at=at(0),
                actor="engine",
                verb="dry_run",
                incident_id="i1",
                transaction_id="t1",
                scope="lab/hotel",
                detail={"ok": True},
            ),
            StoredAudit(
                at=at(1),
                actor="engine",
                verb="write",
                incident_id="i1",
                transaction_id="t1",
                scope="lab/hotel",
            ),
            StoredAudit(at=at(2), actor="U42", verb="approve", incident_id="i1"),
            StoredAudit(
                at=at(3),
                actor="engine",
                verb="write",
                incident_id="i2",
                transaction_id="t2",
                scope="lab/shop",
            ),
        ]
    )
    single = store.audit.append(StoredAudit(at=at(4), actor="U7", verb="refuse", incident_id="i2"))
    assert single.id is not None

    assert [r.verb for r in store.audit.query(incident_id="i1")] == ["dry_run", "write", "approve"]
    assert [r.at for r in store.audit.query(transaction_id="t1")] == [at(0), at(1)]
    assert len(store.audit.query(verb="write")) == 2
    assert len(store.audit.query(verb=["approve", "refuse"])) == 2
    assert [r.actor for r in store.audit.query(actor="U42")] == ["U42"]
    assert len(store.audit.query(scope="lab/shop")) == 1
    assert [r.at for r in store.audit.query(since=at(1), until=at(3))] == [at(1), at(2)]
    assert len(store.audit.query(limit=2)) == 2
    assert store.audit.query(incident_id="i1")[0].detail == {"ok": True}
    assert store.audit.query(incident_id="i1")[0].verb is AuditVerb.DRY_RUN


def test_an_audit_verb_outside_the_vocabulary_is_refused_and_nothing_is_written(
    store: Store,
) -> None:
    good = StoredAudit(at=at(0), actor="engine", verb="write", transaction_id="t1")
    misspelt = StoredAudit(at=at(1), actor="engine", verb="comit", transaction_id="t1")
    with pytest.raises(ValueError, match="comit"):
        store.audit.append_many([good, misspelt])
    assert store.audit.query(transaction_id="t1") == []


def journal(name: str, t: float, change: str = "MODIFIED", **fields: Any) -> StoredJournalEntry:
    values: dict[str, Any] = {
        "cluster": "lab",
        "namespace": "hotel",
        "kind": "Deployment",
        "manager": "kubectl",
        "diff": {},
        "object": {"spec": {"image": f"{name}:{t}"}},
    }
    values.update(fields)
    return StoredJournalEntry(name=name, at=at(t), change_type=change, **values)


def test_journal_window_queries(store: Store) -> None:
    store.journal.append_many(
        [
            journal("web", 0, "ADDED"),
            journal("geo", 10, diff={"spec.replicas": [1, 0]}),
            journal("web", 20, manager="helm"),
            journal("cfg", 30, kind="ConfigMap"),
            journal("web", 40, namespace="shop"),
        ]
    )
    assert [e.at for e in store.journal.query("lab", "hotel")] == [at(0), at(10), at(20), at(30)]
    assert [e.name for e in store.journal.query("lab", "hotel", since=at(10), until=at(30))] == [
        "geo",
        "web",
    ]
    assert [e.name for e in store.journal.query("lab", "hotel", kind="ConfigMap")] == ["cfg"]
    assert [e.at for e in store.journal.query("lab", "hotel", name="web")] == [at(0), at(20)]
    assert store.journal.query("lab", "hotel", name="geo")[0].diff == {"spec.replicas": [1, 0]}
    assert len(store.journal.query("lab", "hotel", limit=1)) == 1
    assert [e.namespace for e in store.journal.query("lab", "shop")] == ["shop"]


def test_last_known_good_is_the_newest_state_before_the_instant(store: Store) -> None:
    store.journal.append_many(
        [
            journal("web", 0, "ADDED"),
            journal("web", 100),
            journal("web", 200, "DELETED", object=None),
            journal("web", 300, "ADDED"),
        ]
    )

    def good(before: float) -> Any:
        row = store.journal.last_known_good("lab", "hotel", "Deployment", "web", before=at(before))
        return None if row is None else row.object

    assert good(0) is None  # strictly before
    assert good(50) == {"spec": {"image": "web:0"}}
    assert good(150) == {"spec": {"image": "web:100"}}
    assert good(250) == {"spec": {"image": "web:100"}}  # the deletion has no state
    assert good(301) == {"spec": {"image": "web:300"}}
    assert store.journal.last_known_good("lab", "hotel", "ConfigMap", "web", before=at(999)) is None


def slack(ts: str, **fields: Any) -> StoredSlackMessage:
    values: dict[str, Any] = {
        "incident_id": "inc-1",
        "channel": "C1",
        "kind": "plan",
        "ref": "plan-1",
        "created_at": at(0),
        "updated_at": at(0),
    }
    values.update(fields)
    return StoredSlackMessage(ts=ts, **values)


def test_slack_messages_save_find_update(store: Store) -> None:
    store.incidents.create(rows.incident())
    store.slack_messages.save(slack("1.1", kind="summary", ref=None))
    store.slack_messages.save(slack("1.2", thread_ts="1.1"))
    store.slack_messages.save(slack("1.3", kind="transaction", ref="txn-1", created_at=at(5)))
    store.slack_messages.save(slack("9.9", incident_id=None, channel="C2", kind="digest", ref=None))

    assert [m.ts for m in store.slack_messages.find(incident_id="inc-1")] == ["1.1", "1.2", "1.3"]
    assert [m.ts for m in store.slack_messages.find(incident_id="inc-1", kind="plan")] == ["1.2"]
    assert [m.ts for m in store.slack_messages.find(ref="txn-1")] == ["1.3"]
    assert [m.channel for m in store.slack_messages.find(kind="digest")] == ["C2"]

    updated = store.slack_messages.update("C1", "1.2", at=at(30), kind="plan_decided")
    assert (updated.kind, updated.ref, updated.updated_at, updated.created_at) == (
        "plan_decided",
        "plan-1",
        at(30),
        at(0),
    )
    # Saving the same (channel, ts) again updates it instead of duplicating it.
    resaved = store.slack_messages.save(
        slack("1.2", kind="plan", updated_at=at(40), created_at=at(40))
    )
    assert (resaved.kind, resaved.updated_at, resaved.created_at) == ("plan", at(40), at(0))
    assert store.slack_messages.get("C1", "1.2").id == updated.id
    assert len(store.slack_messages.find(incident_id="inc-1")) == 3

    with pytest.raises(NotFound):
        store.slack_messages.get("C1", "0.0")
    with pytest.raises(NotFound):
        store.slack_messages.update("C1", "0.0", at=at(1))
