"""What listeners, the webhook, slash commands and the scheduler ask of the incident loop.

Every entry point returns at once and does its work in a lane (`bot.workers.Lanes`):

* **Writers are serialised per scope.** Driving an incident (which may run a transaction for
  minutes) and undoing a transaction both run in the lane `scope:<cluster/namespace>`. The
  writer lock keeps replicas apart; within one process the engine's holder is shared, so this
  lane is what keeps an Undo click from writing next to a running transaction.
* **Decisions are serialised per plan** (`plan:<id>`) **and coalesced per person**: a click
  that repeats a decision waiting, running or made in the last `REPEAT_WINDOW_S` (same
  person, plan, verb and plan contents) adds nothing, so fifty clicks of one person make one
  decision and another person's click is not queued behind them. A later repeat is decided
  and told the plan is already approved. Answers are sent from a lane per person
  (`reply:<channel>:<user>`), so waiting for Slack's pacing never holds the plan's lane.
* **Drives are coalesced**: asking to drive an incident that already has a drive waiting adds
  nothing.
* **Only the leader drives and detects** (`leads`, from the leader election): a follower
  records what it receives — alerts in the inbox, a decision in storage — and the leader's
  `pickup`, every retry period, ingests the inbox and drives what a decision moved.

Every decision's message goes back to the person as an ephemeral message (refusals included:
the agents' `Approvals` has already written the audit record).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence

from agents.detection.events import Detection
from agents.detection.inbox import AlertInbox
from agents.incident.approvals import Decision, Person, Verdict
from agents.model import Alert, IncidentState, Scope, TransactionId
from agents.tnr import Recovered, TransactionEngine, Undoer, UndoResult, UndoStatus, recover
from agents.tnr.records import TransactionRecord
from agents.wiring import Brain
from bot.directory import Directory
from bot.errors import RunLater, SlackCallFailed
from bot.metrics import BotMetrics
from bot.notifier import SlackNotifier
from bot.render import View, render_undo_drift, render_undo_result
from bot.slack_io import SlackIO
from bot.workers import Lanes, Origin
from storage.errors import NotFound, StorageError

logger = logging.getLogger(__name__)

#: A modal's update after a transient failure: tries, and the pause before the n-th retry
#: (n × this). Short: the person is looking at the modal.
VIEW_UPDATE_TRIES = 3
VIEW_UPDATE_PAUSE_S = 1.0

#: (verb, plan id, Slack user id, plan content hash)
DecisionKey = tuple[str, str, str, str]
#: How long a decision just made absorbs repeats of the same click.
REPEAT_WINDOW_S = 2.0
#: An Undo passed on by another cluster's deployment and not run within this long (this
#: cluster's Stratus was down) is dropped, and the person told.
FORWARDED_UNDO_TTL_S = 600.0

#: States a follower's action leaves an incident in without driving it (`/stratus declare`
#: opens it DETECTED); the leader's pickup drives an open incident in one of them that it is
#: not already driving, and one awaiting approval whose plan a follower's click decided
#: (`IncidentMachine.decided`: the decision is recorded, the machine takes it).
DECIDED = frozenset({IncidentState.DETECTED, IncidentState.PLANNING, IncidentState.EXECUTING})


class IncidentOps:
    def __init__(
        self,
        *,
        brain: Brain,
        notifier: SlackNotifier,
        lanes: Lanes,
        directory: Directory,
        slack: SlackIO,
        metrics: BotMetrics,
        recovery_engine: TransactionEngine,
        leads: Callable[[], bool] = lambda: True,
        inbox: AlertInbox | None = None,
    ) -> None:
        self.brain = brain
        self._leads = leads
        self._inbox = inbox
        self._notifier = notifier
        self._lanes = lanes
        self._directory = directory
        self._slack = slack
        self._metrics = metrics
        self._recovery_engine = recovery_engine
        self._recovery_undoer = Undoer(recovery_engine)
        self._lock = threading.Lock()
        self._driving: set[str] = set()
        #: decision → until when a repeat of it is absorbed (inf: waiting or running)
        self._decisions: dict[DecisionKey, float] = {}
        self.repeat_window_s = REPEAT_WINDOW_S
        self._forwarded: set[int] = set()  # forwarded Undo requests waiting or running here
        self._recovery_waiting = False  # a recovery pass is due when a writer lease lapses
        self._recovering = threading.Lock()

    # -------------------------------------------------------------------- detection

    def ingest(self, alerts: Sequence[Alert]) -> Detection:
        """Alerts from a webhook (in the caller's thread: storage errors reach the caller, who
        answers 503), then announce and drive what they opened. A follower queues them for
        the leader instead (every alert's disposition is `queued`)."""
        if self._inbox is not None and not self._leads():
            return self._inbox.post(alerts)
        detection = self.brain.detector.ingest(alerts)
        self.after_detection(detection)
        return detection

    def after_detection(self, detection: Detection) -> None:
        """Announce what the detector decided and drive every incident it opened (also the
        hook for `/stratus declare`)."""
        self._notifier.detected(detection)
        for incident in detection.opened:
            self.drive(incident.id)

    def scan(self) -> None:
        """The periodic scan: synthesised alerts, then the detector's timers."""
        self.after_detection(self.brain.detector.ingest(self.brain.scanner.scan()))
        self.tick()

    def tick(self) -> None:
        self.after_detection(self.brain.detector.tick())

    # -------------------------------------------------------------------- the loop

    def _scope_lane(self, incident_id: str) -> str:
        incident = self.brain.machine.incident(incident_id)
        return f"scope:{incident.scope.key}"

    def drive(self, incident_id: str) -> None:
        """Advance the incident until it waits for a person or closes (coalesced). On a
        follower, nothing: the leader's pickup drives it."""
        if not self._leads():
            logger.info("incident %s: left for the leader to drive", incident_id)
            return
        theirs = self._other_cluster(self.scope_of(incident_id))
        if theirs:
            # One Slack app serves every cluster, so a click on another cluster's incident can
            # reach this deployment: its decision is recorded; that cluster's leader drives.
            logger.info("incident %s: left for the Stratus of cluster %s", incident_id, theirs)
            return

        def run() -> None:
            with self._lock:
                self._driving.add(incident_id)
            try:
                self._drive_now(incident_id)
            finally:
                with self._lock:
                    self._driving.discard(incident_id)

        self._lanes.submit_once(
            self._scope_lane(incident_id),
            run,
            Origin(what=f"drive {incident_id}", incident_id=incident_id),
            once=f"drive {incident_id}",
        )

    def _drive_now(self, incident_id: str) -> None:
        # For an incident awaiting approval, `drive` takes a recorded decision or an expiry,
        # and otherwise leaves it waiting.
        state = self.brain.machine.drive(incident_id)
        logger.info("incident %s driven to %s", incident_id, state)

    def pickup(self) -> None:
        """The leader, every retry period: ingest what followers queued, and drive the open
        incidents a follower's decision moved (`DECIDED`) that no drive here is handling."""
        if self._inbox is not None:
            self._inbox.drain(self.ingest)
        if self.brain.cluster:
            self.forwarded_undos()
        for row in self.brain.store.incidents.list_open(cluster=self.brain.cluster):
            with self._lock:
                running = row.id in self._driving
            if running or self._lanes.waiting(f"drive {row.id}"):
                continue
            state = IncidentState(row.state)
            if state in DECIDED or (
                state is IncidentState.AWAITING_APPROVAL and self.brain.machine.decided(row.id)
            ):
                self.drive(row.id)

    def resume(self) -> None:
        """At start: finish interrupted transactions, re-sync and drive every open incident."""
        self.recover()
        for row in self.brain.store.incidents.list_open(cluster=self.brain.cluster):
            self._notifier.sync_later(row.id)
            self.drive(row.id)

    def housekeeping(self) -> None:
        """Periodically: finish transactions whose writer died (once its lease expired),
        drive every open incident (an expired approval is proposed again), and retry the
        Slack syncs that failed."""
        self.recover()
        for row in self.brain.store.incidents.list_open(cluster=self.brain.cluster):
            self.drive(row.id)
        self._notifier.retry_failed()

    def recover(self) -> list[Recovered]:
        """One recovery pass at a time in this process (start-up, housekeeping and the pass
        due when a writer lease lapses may meet): recovery's holder is one, and a holder
        re-acquiring its own lease keeps it, so two passes could both take a transaction."""
        if not self._recovering.acquire(blocking=False):
            return []  # the pass under way finishes what there is
        try:
            # A separate holder: a transaction running in this process holds its lease under
            # the main holder, so recovery sees it as busy instead of taking it over.
            results = recover(
                self._recovery_engine, self._recovery_undoer, cluster=self.brain.cluster or None
            )
        finally:
            self._recovering.release()
        for result in results:
            logger.info(
                "recovery of %s (%s): %s", result.transaction_id, result.was, result.message
            )
        if any(r.busy for r in results):
            self._recover_soon()
        return results

    def _recover_soon(self) -> None:
        """A writer lease still holds a transaction recovery wants (after a failover, the dead
        leader's): look again a heartbeat later (a third of the lease) rather than at the next
        housekeeping, so the transaction is finished and its incident driven about when the
        lease runs out — not up to `housekeeping_interval_s` after."""
        with self._lock:
            if self._recovery_waiting:
                return
            self._recovery_waiting = True
        due = time.monotonic() + self._recovery_engine.limits.lock_ttl_s / 3

        def again() -> None:
            left = due - time.monotonic()
            if left > 0:
                raise RunLater("a writer lease still runs", left)
            with self._lock:
                self._recovery_waiting = False
            if not self._leads():
                return
            if any(r.outcome is not None for r in self.recover()):
                for row in self.brain.store.incidents.list_open(cluster=self.brain.cluster):
                    self.drive(row.id)

        self._lanes.submit("recovery", again, Origin(what="recovery after a writer lease"))

    # -------------------------------------------------------------------- decisions

    def _tell(self, channel: str | None, user: str, text: str) -> None:
        try:
            self._slack.tell(user, text, channel=channel)
        except SlackCallFailed as e:
            logger.warning("could not tell %s: %s", user, e.error)

    def _claim(self, key: DecisionKey) -> bool:
        """Whether a click makes a new decision: not when the same one (verb, plan, person,
        contents) is waiting, running, or was made less than `repeat_window_s` ago."""
        now = time.monotonic()
        with self._lock:
            until = self._decisions.get(key)
            if until is not None and now < until:
                logger.info("%s %s by %s: a repeat, coalesced", key[0], key[1], key[2])
                return False
            if len(self._decisions) > 1000:
                self._decisions = {k: t for k, t in self._decisions.items() if t > now}
            self._decisions[key] = math.inf  # until it has been made
            return True

    def _settle(self, key: DecisionKey, *, made: bool) -> None:
        """A decision made absorbs repeats for `repeat_window_s` more (its answer is on its
        way); one that failed absorbs none (clicking again is how a person retries)."""
        with self._lock:
            if made:
                self._decisions[key] = time.monotonic() + self.repeat_window_s
            else:
                self._decisions.pop(key, None)

    def _reply(self, channel: str | None, user: str, text: str) -> None:
        """Answer a decision outside the plan's lane: a reply waits for Slack's pacing, and the
        next person's decision must not wait with it."""
        self._lanes.submit(
            f"reply:{channel or '-'}:{user}",
            lambda: self._tell(channel, user, text),
            Origin(what=f"reply to {user}", user=user, channel=channel),
        )

    def approve(self, *, plan_id: str, content_hash: str, user: str, channel: str | None) -> None:
        self._decide(
            ("approve", plan_id, user, content_hash),
            channel,
            lambda person: self.brain.approvals.approve(plan_id, person, content_hash=content_hash),
            taken=Verdict.APPROVED,
        )

    def reject(
        self, *, plan_id: str, content_hash: str, user: str, channel: str | None, reason: str
    ) -> None:
        self._decide(
            ("reject", plan_id, user, content_hash),
            channel,
            lambda person: self.brain.approvals.reject(
                plan_id, person, reason, content_hash=content_hash or None
            ),
            taken=Verdict.REJECTED,
        )

    def _decide(
        self,
        key: DecisionKey,
        channel: str | None,
        decide: Callable[[Person], Decision],
        *,
        taken: Verdict,
    ) -> None:
        """One person's decision on a plan, in the plan's lane: a repeat is absorbed, the
        person gets an answer, and a decision taken drives the incident."""
        verb, plan_id, user, _hash = key
        if not self._claim(key):
            return

        def run() -> None:
            made = False
            try:
                decision = decide(self._directory.person(user))
                # A refusal absorbs no repeat: the person may have just been given the right
                # (or joined the channel) and must see an answer to every click after it.
                made = decision.verdict is not Verdict.REFUSED
            finally:
                self._settle(key, made=made)
            self._metrics.approvals.labels(verdict=decision.verdict.value).inc()
            logger.info("%s %s by %s: %s", verb, plan_id, user, decision.verdict)
            self._reply(channel, user, decision.message)
            if decision.plan is not None and decision.verdict is taken:
                self.drive(decision.plan.incident_id)

        self._lanes.submit(
            f"plan:{plan_id}", run, Origin(what=f"{verb} {plan_id}", user=user, channel=channel)
        )

    def undo(
        self,
        *,
        transaction_id: str,
        user: str,
        channel: str | None,
        view_id: str | None,
        confirm_drift: bool = False,
    ) -> None:
        """Undo a committed transaction. With a modal open (`view_id`), its content becomes
        the result — or the drift and a request for explicit confirmation. A transaction of
        another cluster is passed on to that cluster's Stratus (`forwarded_undos`)."""
        tx = self.brain.engine.ledger.transaction(TransactionId(transaction_id))
        theirs = self._other_cluster(tx.scope)
        if theirs:
            self._forward_undo(
                tx.id, theirs, user=user, channel=channel, view_id=view_id, drift=confirm_drift
            )
            return
        self._undo_here(tx, user=user, channel=channel, view_id=view_id, drift=confirm_drift)

    def _undo_here(
        self,
        tx: TransactionRecord,
        *,
        user: str,
        channel: str | None,
        view_id: str | None,
        drift: bool,
        ran: Callable[[], None] = lambda: None,
    ) -> None:
        """Run the Undo in the scope's lane; `ran` is called once it ran (or failed), not when
        the lane puts it off for later."""

        def run() -> None:
            try:
                person = self._directory.person(user)
                result = self.brain.approvals.undo(tx.id, person, confirm_drift=drift)
            except RunLater:
                raise
            except Exception:
                ran()
                raise
            ran()
            logger.info("undo %s by %s: %s", tx.id, user, result.status)
            self._show_undo(result, user=user, channel=channel, view_id=view_id)

        self._lanes.submit(
            f"scope:{tx.scope.key}",
            run,
            Origin(what=f"undo {tx.id}", user=user, channel=channel, incident_id=tx.incident_id),
        )

    def _forward_undo(
        self,
        transaction_id: str,
        cluster: str,
        *,
        user: str,
        channel: str | None,
        view_id: str | None,
        drift: bool,
    ) -> None:
        """Slack handed a click on another cluster's change to this deployment, whose
        credentials write its own cluster only: record the request for that cluster's
        leader, which runs it and answers the person."""
        mine = self.brain.cluster
        try:
            self.brain.store.undo_requests.put(
                cluster=cluster,
                transaction_id=transaction_id,
                user=user,
                channel=channel,
                view_id=view_id,
                confirm_drift=drift,
                via=mine,
            )
        except StorageError as e:
            logger.warning("undo %s for cluster %s not passed on: %s", transaction_id, cluster, e)
            self._reply(
                channel,
                user,
                f"This change was made in cluster `{cluster}`, and this click reached the "
                f"Stratus of `{mine}`, which could not pass it on (its database did not "
                "answer). Nothing was changed; click Undo again.",
            )
            return
        logger.info("undo %s by %s passed on to cluster %s", transaction_id, user, cluster)
        self._reply(
            channel,
            user,
            f"This change was made in cluster `{cluster}`; your click reached the Stratus of "
            f"`{mine}`, which cannot write there. It passed the Undo on to `{cluster}`'s "
            "Stratus, which will answer here.",
        )

    def forwarded_undos(self) -> None:
        """The leader, every retry period: run the Undo clicks other clusters' deployments
        passed on for this cluster. A request older than `FORWARDED_UNDO_TTL_S` (this
        cluster's Stratus was down) is dropped and the person told: an Undo nobody expects
        any more must not land."""
        store = self.brain.store
        for request in store.undo_requests.take(self.brain.cluster):
            with self._lock:
                if request.id in self._forwarded:
                    continue  # waiting or running in its lane
                self._forwarded.add(request.id)

            def ran(request_id: int = request.id) -> None:
                store.undo_requests.remove(request_id)
                with self._lock:
                    self._forwarded.discard(request_id)

            age_s = request.age_s  # by the database's clock: the two clusters' may differ
            if age_s > FORWARDED_UNDO_TTL_S:
                ran()
                self._reply(
                    request.channel,
                    request.user,
                    f"Your Undo of {request.transaction_id} (clicked {age_s / 60:.0f} min ago, "
                    f"passed on by the Stratus of `{request.via}`) reached this cluster's "
                    "Stratus too late and was not run. Click Undo again if you still want it.",
                )
                continue
            try:
                tx = self.brain.engine.ledger.transaction(TransactionId(request.transaction_id))
            except NotFound:
                logger.warning("forwarded undo of unknown %s dropped", request.transaction_id)
                ran()
                continue
            except StorageError as e:  # kept for the next pickup
                logger.warning("forwarded undo %s waits: %s", request.transaction_id, e)
                with self._lock:
                    self._forwarded.discard(request.id)
                continue
            self._undo_here(
                tx,
                user=request.user,
                channel=request.channel,
                view_id=request.view_id,
                drift=request.confirm_drift,
                ran=ran,
            )

    def _show_undo(
        self, result: UndoResult, *, user: str, channel: str | None, view_id: str | None
    ) -> None:
        view: View = (
            render_undo_drift(result, channel=channel or "")
            if result.status is UndoStatus.DRIFT
            else render_undo_result(result)
        )
        if result.status is not UndoStatus.UNDONE and result.status is not UndoStatus.DRIFT:
            self._tell(channel, user, result.message)
        if view_id:
            try:
                self._update_view(view_id, view)
            except SlackCallFailed as e:
                logger.warning("undo result not shown in the modal: %s", e.error)
                if result.status in (UndoStatus.UNDONE, UndoStatus.DRIFT):  # not told above
                    self._tell(channel, user, result.message)

    def _update_view(self, view_id: str, view: View) -> None:
        """Replace a modal's content, again after a transient failure: a views.update sets
        the whole view, so a repeat is harmless, and a modal left at "Undoing…" would never
        say how the undo ended (issue 14's matrix, `slack:views.update` × 503)."""
        for attempt in range(VIEW_UPDATE_TRIES):
            try:
                self._slack.update_view(view_id, view)
                return
            except SlackCallFailed as e:
                if not e.transient or attempt == VIEW_UPDATE_TRIES - 1:
                    raise
                logger.info("views.update failed (%s); try %d", e.error, attempt + 2)
                time.sleep(VIEW_UPDATE_PAUSE_S * (attempt + 1))

    def _other_cluster(self, scope: Scope) -> str:
        """The scope's cluster when it is not this deployment's ("" when it is, or when this
        deployment does not name its cluster)."""
        mine = self.brain.cluster
        return scope.cluster if mine and scope.cluster != mine else ""

    def scope_of(self, incident_id: str) -> Scope:
        return self.brain.machine.incident(incident_id).scope
