"""The Transactional No-Regression engine (DESIGN section 3, rules 1–6).

A transaction is a bounded batch of typed actions. For each action, in order: read the live
object, compute the desired write, dry-run it on the server, persist a write-ahead undo entry
holding the snapshot, check the fencing token, write, record the resourceVersion produced.
Then validate (settle, sustain) and commit iff μ_after ≤ μ_before ≤ μ0; otherwise pop the undo
stack LIFO and re-measure — if μ is not back to ≤ μ_before, escalate at once.

Fail closed (rule 8): no transaction opens without a complete μ_before (`NOT_STARTED`: nothing
written, try again later); none commits on a figure that was not completely measured; and an
abort that cannot restore every entry, or cannot measure the result, ends HELD — the entries
not restored stay on the stack, and `resume_abort` (Undo, or the incident's next advance)
finishes the job. HELD is never "healthy".

The engine is the only code that writes to a cluster. Every step is an audit record.
`checkpoint(name)` is called at each point of the write path where a crash would leave
distinct state behind; the crash harness kills the process there, production passes nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import StrEnum

from agents.actions import Action, Replace, Write, action_to_json, admit
from agents.actions.snapshot import clean, comparable, unified_diff
from agents.errors import ClusterError, Conflict, Inadmissible, LockLost
from agents.model import (
    IncidentId,
    JsonObject,
    KubeObject,
    ObjectRef,
    Outcome,
    OutcomeKind,
    PlanId,
    Scope,
    TransactionId,
    TransactionStatus,
    UndoState,
)
from agents.ports import Clock, ClusterReader, ClusterWriter
from agents.severity import Severity, SeverityMeter
from agents.tnr.ledger import StorageLedger
from agents.tnr.limits import TnrLimits
from agents.tnr.lock import WriterLock
from agents.tnr.preview import PreviewedAction, preview
from agents.tnr.records import Snapshot, TransactionRecord, UndoRecord
from agents.tnr.restore import Restorer
from agents.tnr.validation import DeadlineExceeded, Validator
from storage.records import AuditVerb

logger = logging.getLogger(__name__)

#: What the audit trail calls a transaction that opened nothing, by its outcome.
_UNOPENED_VERBS = {
    OutcomeKind.REFUSED: AuditVerb.REFUSE,
    OutcomeKind.NOT_STARTED: AuditVerb.NOT_STARTED,
}

Checkpoint = Callable[[str], None]

_WRITE_RETRIES = 3

#: Separates why a transaction aborted from why its abort is held, in the stored reason (so a
#: retry of the restore keeps the first part and states the new second part).
HELD_MARK = " — held: "
#: Begins the reason of a transaction recovery rolled back only because its writer stopped
#: before a verdict (a crash, a lost leadership): see `interrupted`.
INTERRUPTED_MARK = "interrupted: "
#: The validation key holding the services in trouble when the transaction began.
TROUBLE_BEFORE = "trouble_before"


def interrupted(tx: TransactionRecord) -> bool:
    """Whether `tx` was rolled back only because its writer stopped before any verdict (no
    failed validation, no failed write had given it a reason): its plan was never judged, so
    it refutes nothing — the plan may be proposed again."""
    return tx.status is TransactionStatus.ABORTED and (tx.reason or "").startswith(INTERRUPTED_MARK)


def _trouble_before(tx: TransactionRecord) -> frozenset[str] | None:
    """What was in trouble when `tx` began, if on record (older records: None, and today's
    trouble stands in)."""
    names = tx.validation.get(TROUBLE_BEFORE)
    if not isinstance(names, list):
        return None
    return frozenset(str(n) for n in names)


class Step(StrEnum):
    LOCKED = "locked"
    DRY_RUN = "dry_run"
    WRITE = "write"
    SETTLE = "settle"
    SUSTAIN = "sustain"
    COMMITTED = "committed"
    ABORTING = "aborting"
    RESTORE = "restore"
    ABORTED = "aborted"
    ESCALATED = "escalated"
    HELD = "held"
    UNDO = "undo"
    UNDONE = "undone"


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """One step of a running transaction, for the in-place progress message."""

    transaction_id: TransactionId
    step: Step
    message: str
    done: int = 0
    total: int = 0
    mu: float | None = None


ProgressCallback = Callable[[Progress], None]


def _silent(_progress: Progress) -> None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionRequest:
    scope: Scope
    actions: tuple[Action, ...]
    mu0: float  # the incident's baseline: no transaction may end above it
    actor: str  # who approved ("U123", "policy:auto-low-risk", "recovery")
    incident_id: IncidentId | None = None
    plan_id: PlanId | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineOptions:
    """Ablations for the benchmark's baselines. Production runs with both on."""

    validate: bool = True  # off: commit right after the writes (the naive agent)
    rollback: bool = True  # off: a failed validation commits anyway (the no-undo ablation)


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationVerdict:
    """Whether to commit and why; from the validate phase also μ_after (None when it was not
    measured: validation off, or the deadline came first)."""

    commit: bool
    healthy: bool
    reason: str
    mu_after: float | None = None
    validated: bool = True


class DryRunFailed(ClusterError):
    """The server refused the dry run of an action: it was not executed."""

    def __init__(self, action: Action, error: ClusterError) -> None:
        super().__init__(f"dry run of '{action.describe()}' failed: {error}")
        self.action = action
        self.error = error


def verdict(
    *,
    mu_before: float,
    mu_after: float,
    mu0: float,
    require_progress: bool,
    unknown: Sequence[str] = (),
) -> ValidationVerdict:
    """Commit iff μ_after ≤ μ_before and μ_after ≤ μ0 (rule 5); with `require_progress`, an
    unhealthy scope must also be strictly better than before. `unknown`: what the sustain
    window could not measure; anything there refuses the commit (rule 8), whatever μ says."""
    if unknown:
        return ValidationVerdict(
            commit=False,
            healthy=False,
            reason=f"sustain window not wholly measured: {', '.join(unknown)}",
        )
    healthy = mu_after <= 0.0
    if mu_after > mu_before:
        return ValidationVerdict(
            commit=False, healthy=healthy, reason=f"μ rose from {mu_before:g} to {mu_after:g}"
        )
    if mu_after > mu0:
        return ValidationVerdict(
            commit=False, healthy=healthy, reason=f"μ {mu_after:g} is above the baseline μ0 {mu0:g}"
        )
    if require_progress and not healthy and mu_after >= mu_before:
        return ValidationVerdict(
            commit=False, healthy=False, reason=f"no improvement (μ stayed at {mu_after:g})"
        )
    if healthy:
        return ValidationVerdict(commit=True, healthy=True, reason="healthy")
    return ValidationVerdict(
        commit=True, healthy=False, reason=f"μ improved from {mu_before:g} to {mu_after:g}"
    )


@dataclass(slots=True)
class _Run:
    """Mutable bookkeeping of one run (never persisted: the ledger is the record)."""

    tx: TransactionRecord
    lock: WriterLock
    request: TransactionRequest
    mu_before: float
    deadline: float
    emit: ProgressCallback
    #: Services already in trouble when the transaction began: alerts about them that start
    #: later are the fault's own lag, not new trouble the transaction caused.
    trouble: frozenset[str] = frozenset()
    applied: int = 0
    targets: list[ObjectRef] = field(default_factory=list)

    def say(
        self, step: Step, message: str, *, mu: float | None = None, done: int | None = None
    ) -> None:
        self.emit(
            Progress(
                transaction_id=self.tx.id,
                step=step,
                message=message,
                done=self.applied if done is None else done,
                total=len(self.request.actions),
                mu=mu,
            )
        )


class OpenTransaction:
    """A transaction between its opening and its end, the writer lock held. Whoever owns the
    incident's state calls the phases in order — `apply`, then `validate` if every write
    went through, then `commit` or `abort` — and closes it (the `with` block) to release the
    lock. `TransactionEngine.run` is the same sequence for callers with no incident."""

    def __init__(self, engine: TransactionEngine, run: _Run) -> None:
        self._engine = engine
        self._run = run
        self._write_failed = False

    @property
    def id(self) -> TransactionId:
        return self._run.tx.id

    @property
    def validates(self) -> bool:
        """False for the naive agent's engine, which commits right after its writes."""
        return self._engine.options.validate

    @property
    def rolls_back(self) -> bool:
        """Whether `abort` pops the undo stack: not after a failed write in an engine that
        may not roll back (the naive agent's), which leaves what it wrote in place."""
        return not (self._write_failed and not self._engine.options.rollback)

    def apply(self) -> str | None:
        """Write every Action in order, each after its dry run and persisted undo entry. None
        when all were written; else why one failed (nothing after it was written)."""
        failed = self._engine._write_all(self._run)
        self._write_failed = failed is not None
        return failed

    def validate(self) -> ValidationVerdict:
        """Settle, sustain, and the verdict of rule 5 (recorded before any commit)."""
        return self._engine._validate(self._run)

    def commit(self, checked: ValidationVerdict) -> Outcome:
        return self._engine._commit(self._run, checked)

    def abort(self, reason: str, *, mu_after: float | None = None) -> Outcome:
        """Pop the undo stack LIFO and re-measure: ABORTED, ESCALATED or HELD."""
        if not self.rolls_back:
            return self._engine._abandon(self._run, reason)
        return self._engine._abort(self._run, reason=reason, mu_after=mu_after)

    def __enter__(self) -> OpenTransaction:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_rest: object) -> None:
        if kind is not None and issubclass(kind, LockLost):
            logger.error(
                "lock on %s lost mid-transaction; recovery finishes it", self._run.request.scope.key
            )
        self._run.lock.release()


class TransactionEngine:
    def __init__(
        self,
        *,
        reader: ClusterReader,
        writer: ClusterWriter,
        meter: SeverityMeter,
        ledger: StorageLedger,
        clock: Clock,
        holder: str,
        limits: TnrLimits | None = None,
        options: EngineOptions | None = None,
        field_manager: str = "stratus",
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._meter = meter
        self._ledger = ledger
        self._clock = clock
        self._holder = holder
        self.limits = limits or TnrLimits()
        self.options = options or EngineOptions()
        self._field_manager = field_manager
        self._checkpoint = checkpoint or (lambda _name: None)
        self._validator = Validator(reader=reader, meter=meter, clock=clock, limits=self.limits)
        self.restorer = Restorer(
            reader=reader, writer=writer, ledger=ledger, clock=clock, field_manager=field_manager
        )

    # --------------------------------------------------------------------------- helpers

    @property
    def ledger(self) -> StorageLedger:
        return self._ledger

    @property
    def meter(self) -> SeverityMeter:
        return self._meter

    @property
    def clock(self) -> Clock:
        return self._clock

    def lock(self, scope: Scope, *, wait_s: float | None = None) -> WriterLock:
        """A writer lock with a holder identity of its own: two runs in one process (two
        worker threads) exclude each other like two processes do. A crashed run's lease is
        left to expire; recovery takes the scope only then."""
        return WriterLock(
            self._ledger,
            self._clock,
            scope=scope,
            holder=f"{self._holder}#{uuid.uuid4().hex[:8]}",
            ttl_s=self.limits.lock_ttl_s,
            wait_s=self.limits.lock_wait_s if wait_s is None else wait_s,
            poll_s=min(1.0, self.limits.poll_s),
            # A run and its abort get Δ each; a writer still holding the scope after five is
            # wedged, not working (generous: Δ is on the agents' clock, the hold on wall time).
            max_hold_s=5 * self.limits.deadline_s,
        )

    def _audit(self, verb: AuditVerb, run: _Run, detail: JsonObject) -> None:
        self._ledger.audit(
            verb,
            actor=run.request.actor,
            scope=run.request.scope,
            at=self._clock.now(),
            transaction_id=run.tx.id,
            incident_id=run.request.incident_id,
            detail=detail,
        )

    def measure(self, scope: Scope) -> Severity:
        return self._meter.measure(scope)

    def preview(self, scope: Scope, actions: Sequence[Action]) -> list[PreviewedAction]:
        """Admission and a server-side dry run of each action, with the diff an approver reads.
        Writes nothing and takes no lock."""
        return preview(
            self._reader, self._writer, scope, actions, field_manager=self._field_manager
        )

    # ------------------------------------------------------------------------------- run

    def _refuse(self, request: TransactionRequest) -> Outcome | None:
        reasons: list[str] = []
        if len(request.actions) > self.limits.max_actions:
            reasons.append(
                f"{len(request.actions)} actions exceed the limit K = {self.limits.max_actions}"
            )
        if not request.actions:
            reasons.append("the plan has no actions")
        for action in request.actions:
            try:
                admit(action, request.scope)
            except Inadmissible as e:
                reasons.append(str(e))
        if not reasons:
            return None
        reason = "; ".join(reasons)
        logger.info("transaction refused before any write: %s", reason)
        actions = [action_to_json(a) for a in request.actions]
        return self._unopened(request, OutcomeKind.REFUSED, reason, actions=actions)

    def run(
        self, request: TransactionRequest, *, on_progress: ProgressCallback | None = None
    ) -> Outcome:
        """Execute `request` as one transaction, every phase in one call (for callers with no
        incident to move: the CLI, the tests). The incident machine calls the phases itself.
        Raises `LockBusy` when the scope stayed busy and `LockLost` when the lease was taken
        over mid-way (recovery finishes the job)."""
        begun = self.begin(request, on_progress=on_progress)
        if isinstance(begun, Outcome):
            return begun
        with begun:
            failed = begun.apply()
            if failed is not None:
                return begun.abort(failed)
            checked = begun.validate()
            if checked.commit:
                return begun.commit(checked)
            return begun.abort(checked.reason, mu_after=checked.mu_after)

    def begin(
        self, request: TransactionRequest, *, on_progress: ProgressCallback | None = None
    ) -> OpenTransaction | Outcome:
        """Open a transaction for `request`: refuse it before any write (REFUSED), or take the
        writer lock and measure μ_before (NOT_STARTED, lock released, when it cannot). The
        open transaction holds the lock until it is closed."""
        refused = self._refuse(request)
        if refused is not None:
            return refused
        lock = self.lock(request.scope)
        lock.acquire()
        try:
            opened = self._open(request, lock, on_progress or _silent)
        except BaseException:
            lock.release()
            raise
        if isinstance(opened, Outcome):
            lock.release()
        return opened

    def _open(
        self, request: TransactionRequest, lock: WriterLock, emit: ProgressCallback
    ) -> OpenTransaction | Outcome:
        now = self._clock.now()
        # μ_before is measured the way validation measures μ_after: SLOs and capacity
        # now, plus alerts that *start* from here on. Counting the alerts already firing
        # on one side only would make a change that does nothing look like progress
        # (they are not counted after) or a working fix look like a regression.
        before = self._meter.measure(
            request.scope,
            alerts_since=now,
            window_s=max(1, int(self.limits.before_window_s)),
        )
        found = self._meter.measure(request.scope)
        unknown = tuple(dict.fromkeys((*before.unknown, *found.unknown)))
        if unknown:
            return self._not_started(request, unknown)
        tx = self._ledger.open_transaction(
            scope=request.scope,
            incident_id=request.incident_id,
            plan_id=request.plan_id,
            fencing_token=lock.token,
            mu0=request.mu0,
            mu_before=before.mu,
            started_at=now,
            deadline_at=now + timedelta(seconds=self.limits.deadline_s),
            holder=self._holder,
        )
        run = _Run(
            tx=tx,
            lock=lock,
            request=request,
            mu_before=before.mu,
            deadline=self._clock.monotonic() + self.limits.deadline_s,
            emit=emit,
            trouble=found.trouble | before.trouble,
        )
        # On record, so that a rollback finished later (recovery, a held one) judges
        # "new trouble" against the start, not against whatever the write did since.
        self._ledger.set_status(
            tx.id, TransactionStatus.OPEN, validation={TROUBLE_BEFORE: sorted(run.trouble)}
        )
        self._audit(
            AuditVerb.LOCK,
            run,
            {"token": lock.token, "mu_before": before.as_dict(), "mu_found": found.as_dict()},
        )
        run.say(Step.LOCKED, f"Writer lock held; μ = {before.mu:g}", mu=before.mu)
        return OpenTransaction(self, run)

    def _not_started(self, request: TransactionRequest, unknown: tuple[str, ...]) -> Outcome:
        """μ_before is unknown: open nothing, write nothing, say what could not be read."""
        reason = f"not started: cannot measure {', '.join(unknown)}"
        logger.warning("transaction on %s %s", request.scope.key, reason)
        return self._unopened(request, OutcomeKind.NOT_STARTED, reason, unknown=list(unknown))

    def _unopened(
        self, request: TransactionRequest, kind: OutcomeKind, reason: str, **detail: object
    ) -> Outcome:
        """Audit a transaction that opened nothing and wrote nothing, and answer with it."""
        self._ledger.audit(
            _UNOPENED_VERBS[kind],
            actor=request.actor,
            scope=request.scope,
            at=self._clock.now(),
            incident_id=request.incident_id,
            detail={"reason": reason, **detail},
        )
        return Outcome(
            transaction_id=TransactionId(""),
            kind=kind,
            mu_before=request.mu0,
            mu_after=None,
            healthy=False,
            reason=reason,
        )

    def _outcome(
        self,
        run: _Run,
        kind: OutcomeKind,
        reason: str,
        *,
        mu_after: float | None,
        restored: int = 0,
    ) -> Outcome:
        return Outcome(
            transaction_id=run.tx.id,
            kind=kind,
            mu_before=run.mu_before,
            mu_after=mu_after,
            healthy=mu_after is not None and mu_after <= 0.0,
            reason=reason,
            actions_applied=run.applied,
            restored=restored,
        )

    def _write_all(self, run: _Run) -> str | None:
        try:
            for action in run.request.actions:
                self._apply(run, action)
        except (ClusterError, Inadmissible, DeadlineExceeded) as e:
            return str(e)
        return None

    def _validate(self, run: _Run) -> ValidationVerdict:
        if not self.options.validate:
            return ValidationVerdict(
                commit=True, healthy=False, reason="committed without validation", validated=False
            )
        self._ledger.set_status(run.tx.id, TransactionStatus.VALIDATING)
        try:
            run.say(Step.SETTLE, "Waiting for rollouts to converge")
            settled = self._validator.settle(
                run.request.scope,
                run.targets,
                run.lock,
                run.deadline,
                on_tick=lambda: self._checkpoint("settle"),
            )
            run.say(Step.SUSTAIN, f"Watching the scope for {self.limits.sustain_s:.0f}s")

            def sample(severity: Severity) -> None:
                self._checkpoint("sustain")
                run.say(Step.SUSTAIN, "Sustain window", mu=severity.mu)

            after = self._validator.sustain(
                run.request.scope,
                run.lock,
                run.deadline,
                known_trouble=run.trouble,
                on_sample=sample,
            )
        except DeadlineExceeded as e:
            return ValidationVerdict(commit=False, healthy=False, reason=str(e))

        decision = verdict(
            mu_before=run.mu_before,
            mu_after=after.mu,
            mu0=run.request.mu0,
            require_progress=self.limits.require_progress,
            unknown=after.unknown,
        )
        figures: JsonObject = {
            "passed": decision.commit,
            "reason": decision.reason,
            "mu_before": run.mu_before,
            "mu_after": after.mu,
            "mu0": run.request.mu0,
            TROUBLE_BEFORE: sorted(run.trouble),
            "complete": after.complete,
            "unknown": list(after.unknown),
            "settled": settled.converged,
            "settle_s": settled.waited_s,
            "pending": list(settled.pending),
            "severity": after.as_dict(),
        }
        # Recorded before the commit: a crash after this line commits on recovery.
        self._ledger.set_status(
            run.tx.id, TransactionStatus.VALIDATING, mu_after=after.mu, validation=figures
        )
        self._audit(AuditVerb.VALIDATE, run, figures)
        # The no-undo ablation commits whatever validation says.
        return replace(
            decision, commit=decision.commit or not self.options.rollback, mu_after=after.mu
        )

    def _commit(self, run: _Run, checked: ValidationVerdict) -> Outcome:
        if not checked.validated:
            self._finish(
                run,
                TransactionStatus.COMMITTED,
                AuditVerb.COMMIT,
                reason=checked.reason,
                validated=False,
            )
            return self._outcome(run, OutcomeKind.COMMITTED, checked.reason, mu_after=None)
        self._checkpoint("commit")
        # A writer whose lease lapsed while it measured must not record a commit that
        # recovery may already be rolling back: LockLost leaves the decision to recovery.
        run.lock.fence()
        self._finish(
            run,
            TransactionStatus.COMMITTED,
            AuditVerb.COMMIT,
            reason=checked.reason,
            mu_after=checked.mu_after,
            healthy=checked.healthy,
        )
        run.say(Step.COMMITTED, f"Committed: {checked.reason}", mu=checked.mu_after)
        return self._outcome(run, OutcomeKind.COMMITTED, checked.reason, mu_after=checked.mu_after)

    def _abandon(self, run: _Run, reason: str) -> Outcome:
        """A write failed and the engine may not roll back (the naive agent): end ABORTED
        with what was written left in place."""
        self._finish(run, TransactionStatus.ABORTED, AuditVerb.ABORT, reason=reason, rollback=False)
        return self._outcome(run, OutcomeKind.ABORTED, reason, mu_after=None)

    def _finish(
        self,
        run: _Run,
        status: TransactionStatus,
        verb: AuditVerb,
        *,
        reason: str,
        mu_after: float | None = None,
        **detail: object,
    ) -> None:
        self._ledger.set_status(
            run.tx.id,
            status,
            mu_after=mu_after,
            reason=reason,
            ended_at=self._clock.now(),
            # Held: whatever μ an earlier step recorded no longer says how the scope is.
            mu_after_unknown=mu_after is None and status is TransactionStatus.HELD,
        )
        self._audit(verb, run, {"reason": reason, "mu_after": mu_after, **detail})

    def _apply(self, run: _Run, action: Action) -> None:
        """One action: read, dry-run, persist the undo entry, fence, write, record."""
        described = action.describe()
        for attempt in range(_WRITE_RETRIES):
            if self._clock.monotonic() >= run.deadline:
                limit = self.limits.deadline_s
                raise DeadlineExceeded(f"Δ = {limit:.0f}s ran out before '{described}'")
            live = self._reader.get(action.target)
            write = action.desired(live, self._reader)
            as_json = action_to_json(action)
            try:
                diff = self._dry_run(live, write)
            except Conflict:
                continue
            except ClusterError as e:
                self._audit(
                    AuditVerb.DRY_RUN, run, {"action": as_json, "ok": False, "error": str(e)}
                )
                raise DryRunFailed(action, e) from e
            self._audit(AuditVerb.DRY_RUN, run, {"action": as_json, "ok": True, "diff": diff})
            run.say(Step.DRY_RUN, f"Dry run passed: {described}")

            self._checkpoint("before_undo_entry")
            seq = len(self._ledger.stack(run.tx.id))
            rv = live.resource_version
            entry = self._ledger.push(
                transaction_id=run.tx.id,
                seq=seq,
                action=action,
                target=action.target,
                snapshot=Snapshot(existed=True, object=clean(live.body), base_resource_version=rv),
                at=self._clock.now(),
            )
            target = str(action.target)
            detail: JsonObject = {"entry": entry.id, "seq": seq, "target": target, "rv": rv}
            self._audit(AuditVerb.SNAPSHOT, run, detail)
            self._checkpoint("after_undo_entry")

            run.lock.fence()
            try:
                produced_rv, produced = self._write(live, write)
            except Conflict:
                # Nothing was written; the entry stays behind as a skipped record of the try.
                self._ledger.mark_skipped(entry.id, at=self._clock.now())
                logger.info("write of %s conflicted (try %d); re-reading", target, attempt + 1)
                continue
            self._checkpoint("after_write")
            self._ledger.mark_applied(
                entry.id,
                produced_resource_version=produced_rv,
                produced=produced,
                at=self._clock.now(),
            )
            run.applied += 1
            run.targets.append(action.target)
            detail = {"entry": entry.id, "action": as_json, "description": described}
            self._audit(AuditVerb.WRITE, run, {**detail, "resource_version": produced_rv})
            run.say(Step.WRITE, described)
            return
        raise Conflict(f"{action.target} kept changing; '{described}' was not applied")

    def _dry_run(self, live: KubeObject, write: Write) -> str:
        if isinstance(write, Replace):
            dry = self._writer.replace(write.obj, dry_run=True, field_manager=self._field_manager)
            return unified_diff(live.body, dry.body, name=str(write.obj.ref))
        self._writer.delete(write.ref, dry_run=True, resource_version=live.resource_version)
        return f"- {write.ref}"

    def _write(self, live: KubeObject, write: Write) -> tuple[str | None, JsonObject | None]:
        if isinstance(write, Replace):
            result = self._writer.replace(write.obj, field_manager=self._field_manager)
            return result.resource_version, comparable(result.body)
        self._writer.delete(write.ref, resource_version=live.resource_version)
        return None, None

    # ----------------------------------------------------------------------------- abort

    def _abort(self, run: _Run, *, reason: str, mu_after: float | None) -> Outcome:
        self._ledger.set_status(run.tx.id, TransactionStatus.ABORTING, reason=reason)
        self._audit(AuditVerb.ABORT, run, {"reason": reason, "mu_after": mu_after})
        run.say(Step.ABORTING, f"Rolling back: {reason}", mu=mu_after)
        return self._finish_abort(run, reason=reason, mu_after=mu_after)

    def _finish_abort(self, run: _Run, *, reason: str, mu_after: float | None) -> Outcome:
        """Pop the stack LIFO, re-apply each snapshot, settle, re-measure (rule 6). Where a
        restore fails or the result cannot be measured, hold (rule 8)."""
        entries = [
            e
            for e in self._ledger.stack(run.tx.id)
            if e.state in (UndoState.PENDING, UndoState.APPLIED)
        ]
        restored = self._restore_stack(run, entries, reason=reason)
        if isinstance(restored, Outcome):
            return restored
        targets = [entry.target for entry in entries]
        after = self._measure_rollback(run, targets)
        if not after.complete:
            return self._hold(
                run,
                reason=reason,
                why=f"restored {len(entries)} of {len(entries)} change(s), but cannot measure "
                f"{after.unknown_text()}: μ after the rollback is unknown",
                restored=len(entries),
                after=after,
            )
        back, final = self._rollback_verdict(run, after, reason=reason)
        self._finish(
            run,
            TransactionStatus.ABORTED if back else TransactionStatus.ESCALATED,
            AuditVerb.ABORTED if back else AuditVerb.ESCALATE,
            reason=final,
            mu_after=after.mu,
            restored=len(entries),
            severity=after.as_dict(),
        )
        run.say(Step.ABORTED if back else Step.ESCALATED, final, mu=after.mu, done=len(entries))
        kind = OutcomeKind.ABORTED if back else OutcomeKind.ESCALATED
        figure = mu_after if mu_after is not None else after.mu
        outcome = self._outcome(run, kind, final, mu_after=figure, restored=len(entries))
        return replace(outcome, healthy=after.healthy)

    def _restore_stack(
        self, run: _Run, entries: Sequence[UndoRecord], *, reason: str
    ) -> int | Outcome:
        """Re-apply every snapshot, newest first; the number restored, or the hold that a
        failed restore ends in."""
        for index, entry in enumerate(entries):
            try:
                result = self.restorer.restore(
                    entry, run.lock, scope=run.request.scope, actor=run.request.actor
                )
            except ClusterError as e:
                # LIFO: an earlier entry is not restored over a later one left in place.
                left = len(entries) - index
                return self._hold(
                    run,
                    reason=reason,
                    why=f"cannot restore {entry.target} ({e}); {left} of {len(entries)} "
                    "change(s) not restored",
                    restored=index,
                    after=None,
                )
            run.say(Step.RESTORE, f"Restored {entry.target}: {result.note}", done=index + 1)
            self._checkpoint("abort_restore")
        return len(entries)

    def _measure_rollback(self, run: _Run, targets: list[ObjectRef]) -> Severity:
        # The abort must finish whatever Δ says: it gets a fresh window of its own.
        deadline = self._clock.monotonic() + self.limits.deadline_s
        try:
            self._validator.settle(run.request.scope, targets, run.lock, deadline)
            return self._validator.sustain(
                run.request.scope, run.lock, deadline, known_trouble=run.trouble
            )
        except DeadlineExceeded:
            return self._meter.measure(run.request.scope)

    def _rollback_verdict(self, run: _Run, after: Severity, *, reason: str) -> tuple[bool, str]:
        """Whether the rollback is back (ABORTED) or left new harm (ESCALATED), and why.

        Back means the rollback undid what the transaction did. μ may still be above
        μ_before because the fault itself keeps spreading (caches expire, retries pile up):
        that is not ours as long as every service in trouble now was in trouble before, or
        calls one that was — a failure spreads to its callers whether or not we wrote.
        Trouble anywhere else (or a call graph that cannot be read) is what escalates."""
        if after.mu <= run.mu_before:
            return True, reason
        new_trouble = after.measured_trouble - run.trouble
        spread = frozenset[str]()
        if new_trouble:
            callers = self._meter.callers_of(run.request.scope.namespace, run.trouble)
            spread = new_trouble & callers if callers is not None else frozenset()
        unexplained = sorted(new_trouble - spread)
        if unexplained:
            return False, (
                f"{reason}; after the rollback μ is {after.mu:g}, above {run.mu_before:g}, "
                f"with new trouble on {', '.join(unexplained)}"
            )
        return True, (
            f"{reason}; rolled back (μ {after.mu:g} is the fault's own course: only "
            "services already in trouble before the transaction"
            + (f", and {', '.join(sorted(spread))} calling them)" if spread else ")")
        )

    def _hold(
        self, run: _Run, *, reason: str, why: str, restored: int, after: Severity | None
    ) -> Outcome:
        """The rollback is unfinished or unmeasured: leave what was not restored on the
        stack, say exactly what is unknown, and never call it healthy."""
        final = f"{reason}{HELD_MARK}{why}. Undo will finish the restore."
        mu_after = after.mu if after is not None and after.complete else None
        self._finish(
            run,
            TransactionStatus.HELD,
            AuditVerb.HELD,
            reason=final,
            mu_after=mu_after,
            restored=restored,
            severity=after.as_dict() if after is not None else None,
        )
        run.say(Step.HELD, f"Held: {why}", mu=mu_after, done=restored)
        logger.warning("transaction %s held: %s", run.tx.id, why)
        return self._outcome(run, OutcomeKind.HELD, final, mu_after=mu_after, restored=restored)

    def resume_abort(
        self, tx: TransactionRecord, lock: WriterLock, *, actor: str, why: str | None = None
    ) -> Outcome:
        """Finish an abort (or roll back an unfinished transaction) whose writer stopped;
        `why` says how it stopped (recovery reads it from the lease)."""
        request = TransactionRequest(
            scope=tx.scope,
            actions=(),
            mu0=tx.mu0,
            actor=actor,
            incident_id=tx.incident_id,
            plan_id=tx.plan_id,
        )
        recorded = _trouble_before(tx)
        run = _Run(
            tx=tx,
            lock=lock,
            request=request,
            mu_before=tx.mu_before,
            deadline=self._clock.monotonic() + self.limits.deadline_s,
            emit=_silent,
            trouble=recorded if recorded is not None else self._meter.measure(tx.scope).trouble,
        )
        reason = (tx.reason or f"{INTERRUPTED_MARK}{why or 'its writer stopped'}").split(HELD_MARK)[
            0
        ]
        if tx.status is not TransactionStatus.ABORTING:
            self._ledger.set_status(
                tx.id, TransactionStatus.ABORTING, reason=reason, fencing_token=lock.token
            )
            self._audit(AuditVerb.ABORT, run, {"reason": reason, "recovery": True, "takeover": why})
        return self._finish_abort(run, reason=reason, mu_after=tx.mu_after)

    def commit_recorded(
        self, tx: TransactionRecord, *, actor: str, why: str | None = None
    ) -> Outcome:
        """Finish a commit whose passing validation was recorded before a crash."""
        self._ledger.set_status(
            tx.id,
            TransactionStatus.COMMITTED,
            mu_after=tx.mu_after,
            reason=str(tx.validation.get("reason", "validated")),
            ended_at=self._clock.now(),
        )
        self._ledger.audit(
            AuditVerb.COMMIT,
            actor=actor,
            scope=tx.scope,
            at=self._clock.now(),
            transaction_id=tx.id,
            incident_id=tx.incident_id,
            detail={"recovery": True, "validation": tx.validation, "takeover": why},
        )
        healthy = tx.mu_after is not None and tx.mu_after <= 0
        return Outcome(
            transaction_id=tx.id,
            kind=OutcomeKind.COMMITTED,
            mu_before=tx.mu_before,
            mu_after=tx.mu_after,
            healthy=healthy,
            reason=f"validation had passed before {why or 'its writer stopped'}",
        )
