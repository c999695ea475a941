"""Re-applying snapshots: the inverse of every action (rules 3, 6 and 7).

Restoring is idempotent by construction: if the object's comparable form already equals the
snapshot, nothing is written. That is what makes recovery after a crash safe even when the
engine cannot know whether a write it had announced actually happened.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from agents.actions import DeletePod
from agents.actions.snapshot import comparable, field_changes, restorable
from agents.errors import Conflict, NotFound
from agents.model import JsonObject, KubeObject, ObjectRef, Scope, UndoState
from agents.ports import Clock, ClusterReader, ClusterWriter
from agents.tnr.ledger import StorageLedger
from agents.tnr.lock import WriterLock
from agents.tnr.records import UndoRecord
from storage.records import AuditVerb

logger = logging.getLogger(__name__)

_CONFLICT_RETRIES = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Drift:
    """Someone changed an object after our write: what they changed, ours → theirs."""

    target: ObjectRef
    changes: dict[str, list[object]]

    def summary(self, limit: int = 5) -> str:
        shown = [
            f"{path}: {old!r} → {new!r}" for path, (old, new) in list(self.changes.items())[:limit]
        ]
        more = len(self.changes) - limit
        return f"{self.target}: " + "; ".join(shown) + (f" (+{more} more)" if more > 0 else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Restored:
    target: ObjectRef
    wrote: bool  # False when the object already matched the snapshot
    note: str
    overwritten: JsonObject | None = None  # drift discarded: field → [ours, theirs]
    reverted: JsonObject | None = None  # every field the restore changed: field → [was, now]


class Restorer:
    def __init__(
        self,
        *,
        reader: ClusterReader,
        writer: ClusterWriter,
        ledger: StorageLedger,
        clock: Clock,
        field_manager: str,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._ledger = ledger
        self._clock = clock
        self._field_manager = field_manager

    def drift(self, entry: UndoRecord) -> Drift | None:
        """For an applied entry: did the object change since our write? Status and
        controller-written fields do not count; a spec change or a deletion does."""
        if entry.state is not UndoState.APPLIED or isinstance(entry.action, DeletePod):
            return None
        try:
            live = self._reader.get(entry.target)
        except NotFound:
            return Drift(target=entry.target, changes={"(object)": ["present", "deleted"]})
        if live.resource_version == entry.produced_resource_version or entry.produced is None:
            return None
        changes = field_changes(entry.produced, comparable(live.body))
        return Drift(target=entry.target, changes=changes) if changes else None

    def restore(
        self,
        entry: UndoRecord,
        lock: WriterLock,
        *,
        scope: Scope,
        actor: str,
        verb: AuditVerb = AuditVerb.RESTORE,
    ) -> Restored:
        """Put `entry`'s object back to its snapshot and record it. Caller holds `lock`."""
        if isinstance(entry.action, DeletePod) or not entry.snapshot.existed:
            # The pod's controller is its inverse; there is nothing of ours to re-apply.
            self._ledger.mark_restored(entry.id, at=self._clock.now())
            result = Restored(target=entry.target, wrote=False, note="recreated by its controller")
        else:
            result = self._reapply(entry, lock)
        self._audit(entry, scope, actor, verb, result)
        return result

    def _reapply(self, entry: UndoRecord, lock: WriterLock) -> Restored:
        """Write the snapshot back unless the object already equals it, re-reading on a
        conflict up to `_CONFLICT_RETRIES` times."""
        snapshot = entry.snapshot.object or {}
        for attempt in range(_CONFLICT_RETRIES):
            try:
                live: KubeObject | None = self._reader.get(entry.target)
            except NotFound:
                live = None
            if live is not None and comparable(live.body) == comparable(snapshot):
                return self._already_restored(entry)
            result = self._write_snapshot(entry, lock, snapshot, live)
            if result is not None:
                return result
            logger.info(
                "restore of %s conflicted (attempt %d); re-reading", entry.target, attempt + 1
            )
        raise Conflict(f"{entry.target} kept changing while it was being restored")

    def _already_restored(self, entry: UndoRecord) -> Restored:
        """The object equals its snapshot: record that nothing had to be written."""
        if entry.state is UndoState.PENDING:
            self._ledger.mark_skipped(entry.id, at=self._clock.now())
            return Restored(target=entry.target, wrote=False, note="the write never happened")
        self._ledger.mark_restored(entry.id, at=self._clock.now())
        return Restored(target=entry.target, wrote=False, note="already as before")

    def _write_snapshot(
        self, entry: UndoRecord, lock: WriterLock, snapshot: JsonObject, live: KubeObject | None
    ) -> Restored | None:
        """Re-create or replace the object from its snapshot; None when the write conflicted."""
        # What someone else changed after our write (drift), which this restore discards;
        # `reverted` is everything the restore changes, our own write included.
        overwritten = (
            field_changes(entry.produced, comparable(live.body)) or None
            if live is not None and entry.produced is not None
            else None
        )
        reverted = (
            field_changes(comparable(live.body), comparable(snapshot))
            if live is not None
            else {"(object)": [None, "re-created"]}
        )
        lock.fence()
        try:
            if live is None:
                self._writer.create(
                    KubeObject(restorable(snapshot, None)), field_manager=self._field_manager
                )
            else:
                body = restorable(snapshot, live.resource_version)
                self._writer.replace(KubeObject(body), field_manager=self._field_manager)
        except Conflict:
            return None
        self._ledger.mark_restored(entry.id, at=self._clock.now(), overwritten=overwritten)
        return Restored(
            target=entry.target,
            wrote=True,
            note="re-created from its snapshot" if live is None else "snapshot re-applied",
            overwritten=overwritten,
            reverted=reverted,
        )

    def _audit(
        self, entry: UndoRecord, scope: Scope, actor: str, verb: AuditVerb, result: Restored
    ) -> None:
        self._ledger.audit(
            verb,
            actor=actor,
            scope=scope,
            at=self._clock.now(),
            transaction_id=entry.transaction_id,
            detail={
                "entry": entry.id,
                "seq": entry.seq,
                "target": str(entry.target),
                "wrote": result.wrote,
                "note": result.note,
                "overwritten": result.overwritten,
                "reverted": result.reverted,
            },
        )
