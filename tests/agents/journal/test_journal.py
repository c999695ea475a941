"""The change journal over real SQLite storage, fed by `sync()` from a fake cluster."""

from __future__ import annotations

import pytest

from agents.journal import CONFIG_MAP, WATCHED_KINDS, ChangeJournal, WatchedKind
from agents.model import ChangeType, KubeObject, Scope
from agents.redact import REDACTED
from lab.clock import LabClock
from storage import Store
from tests.agents.detection.fakes import FakeCluster, at
from tests.agents.journal.objects import config_map, creator, deployment, managed

HOTEL = Scope(cluster="lab", namespace="hotel")


def put(cluster: FakeCluster, obj: KubeObject) -> None:
    cluster.objects.setdefault((obj.kind, obj.namespace or ""), {})[obj.name] = obj.body


def remove(cluster: FakeCluster, kind: str, name: str) -> None:
    del cluster.objects[(kind, "hotel")][name]


def image_change(seconds: float) -> dict[str, object]:
    """kubectl set image: kubectl takes the image field over from the creator."""
    return managed(
        "kubectl-set",
        seconds,
        {
            "f:spec": {
                "f:template": {"f:spec": {"f:containers": {'k:{"name":"geo"}': {"f:image": {}}}}}
            }
        },
    )


def revision_bump(seconds: float) -> dict[str, object]:
    return managed(
        "kube-controller-manager",
        seconds,
        {"f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}}},
    )


def test_first_sight_is_a_baseline_not_a_change(
    journal: ChangeJournal, cluster: FakeCluster, store: Store, clock: LabClock
) -> None:
    put(cluster, deployment(managers=[creator(0)]))
    put(cluster, config_map())
    clock.advance(300)
    assert journal.sync(cluster) == []
    assert journal.changes(HOTEL, None, None) == []
    rows = store.journal.query("lab", "hotel")
    assert sorted((r.kind, r.change_type, r.diff, r.at) for r in rows) == [
        ("ConfigMap", "ADDED", {}, at(0)),
        ("Deployment", "ADDED", {}, at(0)),
    ]
    # Re-listing the same objects records nothing.
    assert journal.sync(cluster) == []
    assert len(store.journal.query("lab", "hotel")) == 2


def test_a_spec_change_is_attributed_timed_and_diffed(
    journal: ChangeJournal, cluster: FakeCluster, clock: LabClock
) -> None:
    put(cluster, deployment(managers=[creator(0)]))
    journal.sync(cluster)
    clock.advance(600)
    put(
        cluster,
        deployment(
            image="hotel/geo:2.0-broken",
            rv="11",
            managers=[creator(0), image_change(540), revision_bump(541)],
        ),
    )
    (change,) = journal.sync(cluster)
    assert (change.kind, change.name, change.change_type) == (
        "Deployment",
        "geo",
        ChangeType.MODIFIED,
    )
    # Not the controller that bumped the revision a second later: the owner of the field.
    assert change.manager == "kubectl-set"
    assert change.at == at(540)
    assert change.resource_version == "11"
    assert change.diff == {
        "spec.template.spec.containers[geo].image": ("hotel/geo:1.0", "hotel/geo:2.0-broken")
    }
    assert change.summary() == (
        "Deployment/geo changed by kubectl-set: spec.template.spec.containers[geo].image"
    )
    assert journal.changes(HOTEL, at(500), at(600)) == [change]
    assert journal.changes(HOTEL, at(541), None) == []
    assert journal.changes(HOTEL, None, None, kinds=["ConfigMap"]) == []


def test_a_followed_journal_answers_with_changes_nobody_synced(
    journal: ChangeJournal, cluster: FakeCluster, clock: LabClock
) -> None:
    """The headless driver's journal has no watcher: a query made after the clock moved on
    (a validation inside one step) lists the cluster first, once per clock instant."""
    put(cluster, deployment(managers=[creator(0)]))
    journal.follow(cluster)
    assert journal.changes(HOTEL, None, None) == []  # the first sight is the baseline
    clock.advance(600)
    put(
        cluster,
        deployment(image="hotel/geo:2.0-broken", rv="11", managers=[creator(0), image_change(540)]),
    )
    [change] = journal.changes(HOTEL, at(500), None)
    assert (change.name, change.manager, change.at) == ("geo", "kubectl-set", at(540))
    assert journal.last_known_good(HOTEL, "Deployment", "geo", at(540)) is not None
    lists = len(cluster.list_calls)
    journal.changes(HOTEL, None, None)  # same instant: no second listing
    assert len(cluster.list_calls) == lists


def test_status_only_updates_are_not_changes(
    journal: ChangeJournal, cluster: FakeCluster, store: Store
) -> None:
    put(cluster, deployment())
    journal.sync(cluster)
    put(cluster, deployment(rv="12", ready=0, managers=[creator(0), revision_bump(5)]))
    assert journal.sync(cluster) == []
    assert len(store.journal.query("lab", "hotel")) == 1


def test_last_known_good_is_the_state_before_the_first_change(
    journal: ChangeJournal, cluster: FakeCluster, clock: LabClock
) -> None:
    put(cluster, deployment(replicas=3, managers=[creator(0)]))
    journal.sync(cluster)
    scale = managed("kubectl", 100, {"f:spec": {"f:replicas": {}}}, subresource="scale")
    put(cluster, deployment(replicas=0, rv="11", managers=[creator(0), scale]))
    clock.advance(120)
    (scaled,) = journal.sync(cluster)
    assert (scaled.manager, scaled.at, scaled.diff) == (
        "kubectl",
        at(100),
        {"spec.replicas": (3, 0)},
    )
    put(
        cluster,
        deployment(
            replicas=0,
            image="hotel/geo:2",
            rv="12",
            managers=[creator(0), scale, image_change(200)],
        ),
    )
    clock.advance(120)
    (imaged,) = journal.sync(cluster)
    assert imaged.at == at(200)

    good = journal.last_known_good(HOTEL, "Deployment", "geo", before=scaled.at)
    assert good is not None
    assert good["spec"]["replicas"] == 3
    assert good["spec"]["template"]["spec"]["containers"][0]["image"] == "hotel/geo:1.0"
    between = journal.last_known_good(HOTEL, "Deployment", "geo", before=imaged.at)
    assert between is not None and between["spec"]["replicas"] == 0
    # A window opening before the journal's first sight still gets the state before its
    # first change; without a change in the window, a state from before it is unknown.
    early = journal.last_known_good(HOTEL, "Deployment", "geo", before=at(-1))
    assert early == good
    put(cluster, config_map(managers=[managed("helm", 150, {})]))
    journal.sync(cluster)
    assert journal.last_known_good(HOTEL, "ConfigMap", "geo-config", before=at(149)) is None
    assert journal.last_known_good(HOTEL, "ConfigMap", "geo-config", before=at(151)) is not None
    assert journal.last_known_good(HOTEL, "Deployment", "nope", before=at(999)) is None


def test_config_values_are_redacted_before_they_are_stored(
    journal: ChangeJournal, cluster: FakeCluster, store: Store, clock: LabClock
) -> None:
    put(cluster, config_map(data={"DB_HOST": "mongodb-geo", "DB_PASSWORD": "hunter2"}))
    put(cluster, deployment(env={"API_TOKEN": "tok-123", "MODE": "fast"}))
    journal.sync(cluster)
    clock.advance(60)
    put(
        cluster,
        config_map(
            data={
                "DB_HOST": "mongodb-geo-v2",
                "DB_PASSWORD": "correct-horse",
                "DB_URL": "mongodb://geo:correct-horse@mongodb-geo-v2:27017",
            },
            rv="21",
            managers=[managed("kubectl-edit", 50, {"f:data": {"f:DB_HOST": {}}})],
        ),
    )
    (change,) = journal.sync(cluster)
    assert change.manager == "kubectl-edit"
    assert change.diff == {
        "data.DB_HOST": ("mongodb-geo", "mongodb-geo-v2"),
        "data.DB_PASSWORD": (REDACTED, REDACTED),  # it changed; what to is not for us to keep
        "data.DB_URL": (None, f"mongodb://geo:{REDACTED}@mongodb-geo-v2:27017"),
    }
    everything = repr([(r.diff, r.object) for r in store.journal.query("lab", "hotel")])
    for secret in ("hunter2", "correct-horse", "tok-123"):
        assert secret not in everything
    good = journal.last_known_good(HOTEL, "ConfigMap", "geo-config", before=change.at)
    assert good == {"data": {"DB_HOST": "mongodb-geo", "DB_PASSWORD": REDACTED}}
    env = store.journal.query("lab", "hotel", kind="Deployment")[0].object
    assert env is not None
    assert env["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "API_TOKEN", "value": REDACTED},
        {"name": "MODE", "value": "fast"},
    ]


def test_creations_and_deletions_after_the_baseline_are_changes(
    journal: ChangeJournal, cluster: FakeCluster, clock: LabClock
) -> None:
    put(cluster, deployment())
    journal.sync(cluster)
    clock.advance(30)
    put(
        cluster, config_map("feature-flags", {"checkout": "on"}, managers=[managed("helm", 25, {})])
    )
    remove(cluster, "Deployment", "geo")
    added, deleted = sorted(journal.sync(cluster), key=lambda c: c.kind)
    assert (added.kind, added.change_type, added.manager, added.at) == (
        "ConfigMap",
        ChangeType.ADDED,
        "helm",
        at(25),
    )
    assert added.diff == {"data.checkout": (None, "on")}
    assert (deleted.kind, deleted.change_type, deleted.at) == (
        "Deployment",
        ChangeType.DELETED,
        at(30),
    )
    # The state before the deletion is still there to restore.
    good = journal.last_known_good(HOTEL, "Deployment", "geo", before=at(31))
    assert good is not None and good["spec"]["replicas"] == 1


def test_a_restart_compares_with_what_storage_holds(
    journal: ChangeJournal, cluster: FakeCluster, store: Store, clock: LabClock
) -> None:
    put(cluster, deployment(managers=[creator(0)]))
    put(cluster, config_map(data={"DB_HOST": "a", "DB_PASSWORD": "p1"}))
    journal.sync(cluster)
    # The bot is down; someone changes the image and the password meanwhile.
    put(cluster, deployment(image="hotel/geo:9", rv="30", managers=[creator(0), image_change(100)]))
    put(cluster, config_map(data={"DB_HOST": "a", "DB_PASSWORD": "p2"}, rv="31"))
    clock.advance(200)
    restarted = ChangeJournal(store=store, clock=clock, cluster="lab", namespaces=["hotel"])
    (change,) = restarted.sync(cluster)
    assert (change.kind, change.manager, change.at) == ("Deployment", "kubectl-set", at(100))
    assert journal.changes(HOTEL, None, None) == [change]
    # Nothing new: a second restart records nothing at all.
    again = ChangeJournal(store=store, clock=clock, cluster="lab", namespaces=["hotel"])
    assert again.sync(cluster) == []
    assert len(store.journal.query("lab", "hotel")) == 3


def test_secrets_are_never_listed_nor_watched(
    store: Store, clock: LabClock, cluster: FakeCluster, journal: ChangeJournal
) -> None:
    journal.sync(cluster)
    listed = {kind for kind, _ in cluster.list_calls}
    assert listed == {k.kind for k in WATCHED_KINDS} and "Secret" not in listed
    with pytest.raises(ValueError, match="never watches Secret"):
        ChangeJournal(
            store=store,
            clock=clock,
            cluster="lab",
            namespaces=["hotel"],
            kinds=[CONFIG_MAP, WatchedKind(api_version="v1", kind="Secret", fields=("data",))],
        )
    secret = KubeObject({"kind": "Secret", "metadata": {"name": "s", "namespace": "hotel"}})
    assert journal.observe("ADDED", secret) is None
    assert store.journal.query("lab", "hotel") == []


def test_only_covered_namespaces_and_a_failing_list_infers_nothing(
    journal: ChangeJournal, cluster: FakeCluster, store: Store
) -> None:
    put(cluster, deployment())
    journal.sync(cluster)
    assert journal.observe("MODIFIED", deployment(namespace="shop", image="x")) is None
    cluster.failing.add("hotel")
    assert journal.sync(cluster) == []  # not "everything was deleted"
    assert [r.change_type for r in store.journal.query("lab", "hotel")] == ["ADDED"]


def test_watch_events_replays_and_deletions(
    journal: ChangeJournal, cluster: FakeCluster, clock: LabClock
) -> None:
    kind = next(k for k in journal.kinds if k.kind == "Deployment")
    journal.reconcile("hotel", kind, [deployment()])
    assert journal.observe("ADDED", deployment()) is None  # a replay of what the list showed
    clock.advance(10)
    changed = journal.observe(
        "MODIFIED", deployment(image="hotel/geo:2", rv="11", managers=[creator(0), image_change(9)])
    )
    assert changed is not None and changed.manager == "kubectl-set"
    assert journal.observe("MODIFIED", deployment(image="hotel/geo:2", rv="12")) is None
    created = journal.observe("ADDED", deployment("rate", rv="13"))
    assert created is not None and created.change_type is ChangeType.ADDED
    deleted = journal.observe("DELETED", deployment("rate", rv="14"))
    assert deleted is not None and deleted.change_type is ChangeType.DELETED
    assert journal.observe("DELETED", deployment("never-seen", rv="15")) is None
    assert journal.observe("BOOKMARK", deployment(rv="16")) is None


def test_a_change_in_the_same_second_as_the_baseline(
    journal: ChangeJournal, cluster: FakeCluster
) -> None:
    put(cluster, deployment(managers=[creator(0)]))
    journal.sync(cluster)
    put(cluster, deployment(image="hotel/geo:2", rv="11", managers=[creator(0), image_change(0)]))
    (change,) = journal.sync(cluster)
    assert change.at == at(0)  # managedFields times have whole seconds: a tie
    good = journal.last_known_good(HOTEL, "Deployment", "geo", before=change.at)
    assert good is not None
    assert good["spec"]["template"]["spec"]["containers"][0]["image"] == "hotel/geo:1.0"


def test_a_sync_stops_when_the_api_does_not_answer(
    store: Store, clock: LabClock, cluster: FakeCluster
) -> None:
    """A refusal of one kind (403, 404) skips that kind; an API that does not answer (a
    timeout, a refused connection) ends the sync: each further list would wait out its own
    deadline, ten kinds per namespace."""
    from agents.errors import Forbidden, TransientError

    journal = ChangeJournal(store=store, clock=clock, cluster="lab", namespaces=["hotel", "geo"])
    asked: list[str] = []

    class Answers:
        def __init__(self, error: Exception) -> None:
            self.error = error

        def __getattr__(self, name: str) -> object:
            return getattr(cluster, name)

        def list_objects(self, *, api_version: str, kind: str, namespace: str | None) -> object:
            asked.append(kind)
            if kind == "Service":
                raise self.error
            return cluster.list_objects(api_version=api_version, kind=kind, namespace=namespace)

    journal.sync(Answers(Forbidden("services is forbidden")))  # type: ignore[arg-type]
    assert len(asked) == 2 * len(WATCHED_KINDS)
    asked.clear()
    journal.sync(Answers(TransientError("no answer within the deadline")))  # type: ignore[arg-type]
    assert asked[-1] == "Service" and len(asked) < len(WATCHED_KINDS)
