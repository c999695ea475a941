"""The change journal: who changed which watched object, what changed, and when.

"What changed just before it broke" is the first question of every diagnosis, and the state
before that change is what a "put it back" plan restores. The journal records, for the
Deployments, StatefulSets, Services and ConfigMaps of the covered namespaces, every change of
their spec (ConfigMap: data) as a field-level diff against the last state it saw, attributed
through managedFields (`agents.journal.managed`), with the object's tracked state — both
redacted (`agents.redact`) before they reach storage.

**First sight is a baseline, not a change.** When the journal first lists a kind in a
namespace, every object in it is recorded as a *baseline*: change type ADDED with an empty
diff, stamped with the object's last managedFields time (the state is as of then). Baselines
give last-known-good lookups their starting point and are never reported by `changes()`. An
object that appears later (a watch ADDED after the first list, or a new name in a later
`sync`) is a real creation, reported with the fields it was created with.

**Restarts.** Seen states live in memory; after a restart the first sight of an object is
compared with the newest state in storage, so a change made while the bot was down is still
recorded (attributed and timed by managedFields). That comparison sees redacted values: a
change of a secret-looking value during the downtime is invisible, and deletions during the
downtime are not noticed. In memory, diffs are computed on the real values and redacted
afterwards, so a changed password shows as a change of a `‹redacted›` value.

**Restoring.** `last_known_good` returns the redacted state: a value equal to
`agents.redact.REDACTED` (see `contains_redacted`) is unknown, and a restore must keep the
live value there rather than write the marker.

Two ways to feed it: `sync(reader)` lists everything and records the differences (the
headless driver, single-threaded and deterministic), and `JournalWatcher` runs one watch per
kind and namespace and calls `observe`/`reconcile` (the bot). Both may share one journal:
calls are serialised by a lock. A journal nobody watches can `follow(reader)`: it then syncs
before it answers a query (at most once per clock instant), so a diagnosis made in the middle
of a headless step — after a transaction's validation moved the clock on — still sees what
changed meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agents.actions.snapshot import field_changes
from agents.errors import ClusterError, TransientError
from agents.journal.kinds import NEVER_WATCHED, WATCHED_KINDS, WatchedKind
from agents.journal.managed import UNKNOWN_MANAGER, attribute
from agents.model import Change, ChangeType, JsonObject, KubeObject, Scope
from agents.ports import Clock, ClusterReader
from agents.redact import redact_at_path, redact_value
from storage import Store
from storage.records import StoredJournalEntry

logger = logging.getLogger(__name__)

#: Rows one `changes()` query reads at most; more in one window is logged as truncated.
QUERY_LIMIT = 5000
_END_OF_TIME = datetime(9999, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class _Seen:
    content: JsonObject  # the tracked part; raw in memory, redacted when loaded from storage
    redacted: bool
    at: datetime
    resource_version: str | None


def is_baseline(row: StoredJournalEntry) -> bool:
    return row.change_type == ChangeType.ADDED.value and not row.diff


def change_from_record(row: StoredJournalEntry) -> Change:
    return Change(
        at=row.at,
        cluster=row.cluster,
        namespace=row.namespace,
        kind=row.kind,
        name=row.name,
        manager=row.manager or UNKNOWN_MANAGER,
        change_type=ChangeType(row.change_type),
        diff={path: (pair[0], pair[1]) for path, pair in row.diff.items()},
        resource_version=row.resource_version,
    )


_ABSENT = object()


def _skeleton(value: Any) -> Any:
    """`value` with every leaf replaced by a marker, keeping maps and named lists, so that
    `field_changes(_skeleton(v), v)` lists the leaves of `v` the way a diff names them."""
    if isinstance(value, dict):
        return {k: _skeleton(v) for k, v in value.items()}
    if (
        isinstance(value, list)
        and value
        and all(isinstance(i, dict) and "name" in i for i in value)
    ):
        return [{**_skeleton(i), "name": i["name"]} for i in value]
    return _ABSENT


def created_diff(content: JsonObject) -> dict[str, list[Any]]:
    """The diff of an object's creation: each leaf field from nothing to its value."""
    diff = field_changes(_skeleton(content), content)
    return {path: [None, pair[1]] for path, pair in diff.items()}


def _redact_diff(diff: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {path: [redact_at_path(path, v) for v in pair] for path, pair in diff.items()}


class ChangeJournal:
    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        cluster: str,
        namespaces: Sequence[str],
        kinds: Sequence[WatchedKind] = WATCHED_KINDS,
    ) -> None:
        refused = [k.kind for k in kinds if k.kind in NEVER_WATCHED]
        if refused:
            raise ValueError(f"the change journal never watches {', '.join(refused)}")
        self._store = store
        self._clock = clock
        self._cluster = cluster
        self._namespaces = tuple(namespaces)
        self._kinds = {k.kind: k for k in kinds}
        self._seen: dict[tuple[str, str, str], _Seen] = {}
        self._listed: set[tuple[str, str]] = set()
        self._lock = threading.RLock()
        self._followed: ClusterReader | None = None
        self._synced_at: datetime | None = None

    @property
    def cluster(self) -> str:
        return self._cluster

    @property
    def namespaces(self) -> tuple[str, ...]:
        return self._namespaces

    @property
    def kinds(self) -> tuple[WatchedKind, ...]:
        return tuple(self._kinds.values())

    # ------------------------------------------------------------------------ recording

    def observe(self, event_type: str, obj: KubeObject) -> Change | None:
        """Record one watch event (ADDED | MODIFIED | DELETED). Returns the change, or None
        when nothing tracked changed (status updates, replays) or it was a baseline."""
        with self._lock:
            row = self._entry(event_type, obj)
            if row is None:
                return None
            self._store.journal.append(row)
            return None if is_baseline(row) else change_from_record(row)

    def reconcile(
        self, namespace: str, kind: WatchedKind, objects: Sequence[KubeObject]
    ) -> list[Change]:
        """Record the differences between a full list of `kind` in `namespace` and the last
        states seen (objects missing from the list were deleted). One storage transaction."""
        with self._lock:
            rows = []
            names = set()
            for obj in sorted(objects, key=lambda o: o.name):
                names.add(obj.name)
                row = self._entry(ChangeType.MODIFIED.value, obj)
                if row is not None:
                    rows.append(row)
            gone = sorted(
                key[2]
                for key in self._seen
                if key[0] == namespace and key[1] == kind.kind and key[2] not in names
            )
            for name in gone:
                rows.append(self._deleted(namespace, kind.kind, name, None))
            self._listed.add((namespace, kind.kind))
            if rows:
                self._store.journal.append_many(rows)
            return [change_from_record(r) for r in rows if not is_baseline(r)]

    def follow(self, reader: ClusterReader) -> None:
        """Sync from `reader` before every query (no watcher feeds this journal)."""
        self._followed = reader

    def _catch_up(self) -> None:
        if self._followed is None:
            return
        now = self._clock.now()
        with self._lock:
            if self._synced_at == now:
                return
            self.sync(self._followed)

    def sync(self, reader: ClusterReader) -> list[Change]:
        """List every watched kind in every covered namespace and record the differences.
        A namespace or kind whose list fails is skipped (nothing is inferred from it). When
        the API does not answer at all (a timeout, a refused connection, a 5xx), the rest of
        this sync is skipped too: each list would wait out its own deadline."""
        self._synced_at = self._clock.now()
        changes: list[Change] = []
        for namespace in self._namespaces:
            for kind in self._kinds.values():
                try:
                    objects = reader.list_objects(
                        api_version=kind.api_version, kind=kind.kind, namespace=namespace
                    )
                except TransientError as e:
                    logger.warning("journal sync stopped at %s in %s: %s", kind.kind, namespace, e)
                    return changes
                except ClusterError as e:
                    logger.warning("journal sync of %s in %s failed: %s", kind.kind, namespace, e)
                    continue
                changes += self.reconcile(namespace, kind, objects)
        return changes

    def _entry(self, event_type: str, obj: KubeObject) -> StoredJournalEntry | None:
        kind = self._kinds.get(obj.kind)
        namespace = obj.namespace
        if kind is None or namespace is None or namespace not in self._namespaces:
            return None
        if event_type == ChangeType.DELETED.value:
            return self._deletion(namespace, kind.kind, obj)
        if event_type not in (ChangeType.ADDED.value, ChangeType.MODIFIED.value):
            return None
        key = (namespace, kind.kind, obj.name)
        seen = self._seen.get(key)
        if (
            seen is not None
            and obj.resource_version
            and seen.resource_version == obj.resource_version
        ):
            return None  # the very state last seen (a relist or a replay): nothing to compare
        current = kind.tracked(obj.body)
        managed = obj.metadata.get("managedFields")
        previous = seen or self._stored(*key)
        now = self._clock.now()
        if previous is None:
            return self._first_sight(key, obj, current, managed, now=now)
        return self._modified(key, previous, obj, current, managed, now=now)

    def _deletion(self, namespace: str, kind: str, obj: KubeObject) -> StoredJournalEntry | None:
        """A deletion of an object the journal knows (in memory or in storage)."""
        if (namespace, kind, obj.name) not in self._seen and not self._stored(
            namespace, kind, obj.name
        ):
            return None
        return self._deleted(namespace, kind, obj.name, obj.resource_version)

    def _first_sight(
        self,
        key: tuple[str, str, str],
        obj: KubeObject,
        current: JsonObject,
        managed: Any,
        *,
        now: datetime,
    ) -> StoredJournalEntry:
        """An object the journal has no state of: a baseline or a creation."""
        namespace, kind, _name = key
        # Before the kind's first full list of the namespace, everything is a baseline.
        baseline = (namespace, kind) not in self._listed
        attribution = attribute(managed)
        self._seen[key] = _Seen(
            content=current,
            redacted=False,
            at=attribution.at or now,
            resource_version=obj.resource_version,
        )
        diff = {} if baseline else _redact_diff(created_diff(current))
        return self._row(
            key,
            change_type=ChangeType.ADDED,
            at=attribution.at or now,
            manager=attribution.manager,
            diff=diff or ({} if baseline else {"metadata.name": [None, obj.name]}),
            content=current,
            resource_version=obj.resource_version,
        )

    def _modified(
        self,
        key: tuple[str, str, str],
        previous: _Seen,
        obj: KubeObject,
        current: JsonObject,
        managed: Any,
        *,
        now: datetime,
    ) -> StoredJournalEntry | None:
        """A change against the last state seen; None when the tracked part is the same."""
        before = previous.content
        after = redact_value(current) if previous.redacted else current
        raw_diff = field_changes(before, after)
        if not raw_diff:
            previous.resource_version = obj.resource_version
            return None
        attribution = attribute(managed, raw_diff, not_before=previous.at)
        at = max(attribution.at or now, previous.at)
        self._seen[key] = _Seen(
            content=current, redacted=False, at=at, resource_version=obj.resource_version
        )
        return self._row(
            key,
            change_type=ChangeType.MODIFIED,
            at=at,
            manager=attribution.manager,
            diff=_redact_diff(raw_diff),
            content=current,
            resource_version=obj.resource_version,
        )

    def _deleted(
        self, namespace: str, kind: str, name: str, resource_version: str | None
    ) -> StoredJournalEntry:
        seen = self._seen.pop((namespace, kind, name), None)
        now = self._clock.now()
        return self._row(
            (namespace, kind, name),
            change_type=ChangeType.DELETED,
            at=max(now, seen.at) if seen is not None else now,
            manager=UNKNOWN_MANAGER,  # managedFields do not record deletions
            diff={},
            content=None,
            resource_version=resource_version,
        )

    def _row(
        self,
        key: tuple[str, str, str],
        *,
        change_type: ChangeType,
        at: datetime,
        manager: str,
        diff: dict[str, list[Any]],
        content: JsonObject | None,
        resource_version: str | None,
    ) -> StoredJournalEntry:
        namespace, kind, name = key
        if change_type is not ChangeType.ADDED or diff:
            logger.info(
                "journal: %s %s/%s/%s by %s (%d field(s))",
                change_type.value,
                kind,
                namespace,
                name,
                manager,
                len(diff),
            )
        return StoredJournalEntry(
            cluster=self._cluster,
            namespace=namespace,
            kind=kind,
            name=name,
            at=at,
            manager=manager,
            change_type=change_type.value,
            resource_version=resource_version,
            diff=diff,
            object=redact_value(content) if content is not None else None,
        )

    def _stored(self, namespace: str, kind: str, name: str) -> _Seen | None:
        """The newest state storage holds (after a restart), as a redacted `_Seen`."""
        row = self._store.journal.last_known_good(
            self._cluster, namespace, kind, name, before=_END_OF_TIME
        )
        if row is None or row.object is None:
            return None
        seen = _Seen(
            content=row.object, redacted=True, at=row.at, resource_version=row.resource_version
        )
        self._seen[(namespace, kind, name)] = seen
        return seen

    # ------------------------------------------------------------------------ queries

    def changes(
        self,
        scope: Scope,
        since: datetime | None,
        until: datetime | None,
        kinds: Collection[str] | None = None,
    ) -> list[Change]:
        """Changes in `scope` with `since <= at < until`, oldest first, baselines left out."""
        self._catch_up()
        rows = self._store.journal.query(
            scope.cluster, scope.namespace, since=since, until=until, limit=QUERY_LIMIT
        )
        if len(rows) >= QUERY_LIMIT:
            logger.warning(
                "journal: more than %d entries in %s between %s and %s; the rest are left out",
                QUERY_LIMIT,
                scope.key,
                since,
                until,
            )
        return [
            change_from_record(r)
            for r in rows
            if not is_baseline(r) and (kinds is None or r.kind in kinds)
        ]

    def last_known_good(
        self, scope: Scope, kind: str, name: str, before: datetime
    ) -> JsonObject | None:
        """The object's tracked state (spec, or ConfigMap data) just before its first change
        at or after `before` (pass the time of the first change of the suspect window), or
        its newest state before `before` when it did not change since. Redacted values are
        `REDACTED` and must not be restored verbatim. None when the journal has no state from
        before then.

        Entries are ordered by time, then by the order they were recorded: managedFields
        times have whole seconds, so a baseline and the change that followed it within the
        same second share a timestamp, and only the recording order tells them apart.
        """
        self._catch_up()
        rows = self._store.journal.query(
            scope.cluster, scope.namespace, kind=kind, name=name, limit=QUERY_LIMIT
        )
        end = next(
            (i for i, r in enumerate(rows) if r.at >= before and not is_baseline(r)),
            None,
        )
        if end is None:
            end = next((i for i, r in enumerate(rows) if r.at >= before), len(rows))
        for row in reversed(rows[:end]):
            if row.change_type != ChangeType.DELETED.value and row.object is not None:
                return dict(row.object)
        return None
