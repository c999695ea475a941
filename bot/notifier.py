"""`SlackNotifier`: the incident loop's `Notifier`, made of Slack messages.

The loop calls `notify` from whatever thread moved the incident, after the state is persisted.
`notify` only counts the event and asks for a *sync* of the incident's messages in the
incident's lane (one at a time per incident, in order). A sync compares what the channel
should show — computed from storage by `IncidentMessages` — with the messages already posted
(`slack_messages`), posts what is missing and updates what changed. So:

* a message is never lost: a failed post is retried by the next sync (the next event, or the
  housekeeping job for incidents whose last sync failed);
* a message is never posted twice: it is recorded as soon as `SlackIO.post` returns, and a
  file or chart that fails after it does not fail the post (`SlackIO.attach` queues it);
* progress is coalesced: while a sync waits for a message's update slot, later progress
  events only mark the incident for one more sync, which renders the latest state;
* no sync sleeps: everything is sent with `wait=False`. A post whose channel slot is busy
  raises `SlotBusy` out of the sync, and the lane runs the sync again (first in its lane)
  when the slot is free, giving the worker to other incidents meanwhile. An update whose
  message slot is busy is skipped, the rest of the sync goes on, and the sync runs again
  when the earliest skipped slot is free. The announcement of a new incident in the shared
  incidents channel has a lane of its own, so no incident's messages wait behind it;
* a restart re-syncs each open incident and finds its channel and messages in storage.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import threading
from collections.abc import Callable, Mapping

from agents.detection.events import AlertsUpdated, Detection, IncidentOpened
from agents.incident.events import (
    Closed,
    Diagnosed,
    IncidentEvent,
    StateChanged,
    TransactionFinished,
    TransactionProgress,
    Undone,
)
from agents.model import Incident, IncidentState
from agents.ports import Clock
from agents.tnr import Progress
from bot.channels import IncidentChannels, Location
from bot.errors import RunLater, SlackCallFailed, SlotBusy
from bot.ids import MessageKind
from bot.messages import IncidentMessages, Wanted
from bot.metrics import BotMetrics
from bot.render import Attachment, Message, render_alerts_updated
from bot.slack_io import SlackIO
from bot.workers import Lanes, Origin
from storage import StorageError, Store
from storage.records import StoredSlackMessage

logger = logging.getLogger(__name__)

#: Tries of an announcement whose post failed, a pause of `ANNOUNCE_RETRY_S` × the try
#: between them, before it waits for the incident's next sync.
ANNOUNCE_TRIES = 3
ANNOUNCE_RETRY_S = 2.0

#: Threads that query and draw diagnosis charts (the drawing itself is one at a time).
CHART_WORKERS = 2

#: The lane of the announcements in the incidents channel (one channel, so one lane).
ANNOUNCE_LANE = "announce"


def _digest(message: Message) -> str:
    text, blocks = message.payload()
    return hashlib.sha256(json.dumps([text, blocks], sort_keys=True).encode()).hexdigest()


class SlackNotifier:
    def __init__(
        self,
        *,
        store: Store,
        messages: IncidentMessages,
        channels: IncidentChannels,
        slack: SlackIO,
        lanes: Lanes,
        metrics: BotMetrics,
        clock: Clock,
    ) -> None:
        self._clock = clock
        self._store = store
        self._messages = messages
        self._channels = channels
        self._slack = slack
        self._lanes = lanes
        self._metrics = metrics
        self._lock = threading.Lock()
        self._failed: set[str] = set()
        self._digests: dict[tuple[str, str], str] = {}
        self._progress: dict[str, Progress] = {}
        self._findings: dict[str, tuple[str, ...]] = {}
        self._ended: dict[str, str] = {}
        self._announcing: set[str] = set()  # incidents whose announcement is queued
        # Charts are drawn off the Slack lanes: a chart is a Prometheus query and a drawing in
        # the chart worker (one at a time), and twenty of them on the lanes held every
        # other incident's messages back by seconds.
        self._charts = Lanes(workers=CHART_WORKERS, name="stratus-charts")

    # ------------------------------------------------------------------- Notifier port

    def notify(self, event: IncidentEvent) -> None:
        self._count(event)
        if isinstance(event, TransactionProgress):
            with self._lock:
                self._progress[event.progress.transaction_id] = event.progress
        if event.incident is not None:
            self.sync_later(event.incident.id)

    def detected(self, detection: Detection) -> None:
        """What the detector announced: new incidents, and coalesced alert updates."""
        for event in detection.events:
            if isinstance(event, IncidentOpened):
                self._metrics.incidents_opened.labels(source=event.incident.source).inc()
                with self._lock:
                    self._findings[event.incident.id] = event.findings
                self.sync_later(event.incident.id)
            elif isinstance(event, AlertsUpdated) and event.new:
                # Only alerts that joined are news; resolutions ("3 resolved", "2 resolved",
                # …) are noise at 3 a.m. and show in the summary and the closing message.
                self._post_alerts_later(event)

    def _count(self, event: IncidentEvent) -> None:
        m = self._metrics
        if isinstance(event, StateChanged):
            state = event.incident.state
            m.incident_transitions.labels(state=state.value).inc()
            if state in (IncidentState.RESOLVED, IncidentState.ESCALATED):
                with self._lock:
                    self._ended[event.incident.id] = state.value
        elif isinstance(event, Closed):
            with self._lock:
                ended = self._ended.pop(event.incident.id, "unknown")
            m.incidents_closed.labels(state=ended).inc()
        elif isinstance(event, TransactionFinished):
            m.transactions.labels(outcome=event.outcome.kind.value).inc()
        elif isinstance(event, Undone):
            m.undos.labels(status=event.result.status.value).inc()
        elif isinstance(event, Diagnosed) and event.diagnosis.tokens:
            m.llm_tokens.labels(reasoner=event.diagnosis.reasoner).inc(event.diagnosis.tokens)

    # ------------------------------------------------------------------------- syncing

    def sync_later(self, incident_id: str) -> None:
        """Ask for a sync of the incident's messages (coalesced: at most one waits)."""
        self._lanes.submit_once(
            incident_id,
            lambda: self.sync(incident_id),
            Origin(what=f"sync {incident_id}", incident_id=incident_id),
            once=f"sync {incident_id}",
        )

    def retry_failed(self) -> list[str]:
        """Sync again every incident whose last sync failed, and upload again the files
        whose message went out without them (the housekeeping job)."""
        with self._lock:
            failed = sorted(self._failed)
        for incident_id in failed:
            self.sync_later(incident_id)
        self._slack.retry_files()
        return failed

    def sync(self, incident_id: str) -> None:
        """Bring the incident's Slack messages in line with storage (in its lane)."""
        try:
            self._sync(incident_id)
        except (SlackCallFailed, StorageError) as e:
            # A sync reads storage as much as it calls Slack: a failed read (a dropped
            # connection, a database shedding load) must be retried like a failed post, or
            # the incident's messages are never posted (found by the transient-fault matrix:
            # the summary lost, the incident silent).
            with self._lock:
                self._failed.add(incident_id)
            logger.warning("incident %s: Slack is behind (%s); will retry", incident_id, e)
            return
        with self._lock:
            self._failed.discard(incident_id)

    def _sync(self, incident_id: str) -> None:
        incident = self._messages.incident(incident_id)
        with self._lock:
            progress = dict(self._progress)
            findings = self._findings.get(incident_id, ())
        wanted = self._messages.wanted(incident, progress=progress, findings=findings)
        location = self._locate_or_open(incident, wanted)
        diagnosis = next((w for w in wanted if w.kind is MessageKind.DIAGNOSIS), None)
        if diagnosis is not None:
            self._channels.follow_root_cause(incident, self._messages.root_cause(incident))
        existing = {
            (r.kind, r.ref or ""): r
            for r in self._store.slack_messages.find(incident_id=incident_id)
        }
        if self._channels.announces and (MessageKind.ANNOUNCE, incident_id) not in existing:
            self._announce_later(incident, location.channel)
        busy = self._post_or_update(incident_id, wanted, existing, location)
        self._slack.send_files(location.channel)
        if busy:
            raise min(busy, key=lambda e: e.delay_s)

    def _locate_or_open(self, incident: Incident, wanted: list[Wanted]) -> Location:
        """Where the incident's messages go, opening its channel (with the summary) if none."""
        location = self._channels.locate(incident.id)
        if location is not None:
            return location
        summary = next(w for w in wanted if w.kind is MessageKind.SUMMARY)
        location = self._channels.open(incident, summary.message)
        self._remember_digest(summary.key, summary.message)
        return location

    def _post_or_update(
        self,
        incident_id: str,
        wanted: list[Wanted],
        existing: Mapping[tuple[str, str], StoredSlackMessage],
        location: Location,
    ) -> list[SlotBusy]:
        """Post each missing message and update each changed one; the updates skipped
        because their slot was busy."""
        busy: list[SlotBusy] = []  # updates skipped for their slot
        for item in wanted:
            row = existing.get(item.key)
            if row is None:
                self._post(incident_id, item, location)
            elif item.updatable and self._changed(item.key, item.message):
                skipped = self._update(row, item)
                if skipped is not None:
                    busy.append(skipped)
        return busy

    def _update(self, row: StoredSlackMessage, item: Wanted) -> SlotBusy | None:
        try:
            self._slack.update(row.channel, row.ts, item.message, wait=False)
        except SlotBusy as e:
            return e
        self._store.slack_messages.update(row.channel, row.ts, at=self._clock.now())
        self._remember_digest(item.key, item.message)
        return None

    def _post(self, incident_id: str, item: Wanted, location: Location) -> None:
        posted = self._slack.post(
            location.channel, item.message, thread_ts=location.thread_ts, wait=False
        )
        self._channels.remember(incident_id, item.kind, item.ref, location, posted.ts)
        self._remember_digest(item.key, item.message)
        if item.chart is not None:
            self._chart_later(incident_id, item.chart, location)

    def _chart_later(
        self, incident_id: str, chart: Callable[[], bytes | None], location: Location
    ) -> None:
        """Draw the chart of a message just posted on the chart lanes, then queue its file for
        the channel and let the incident's lane send it when the channel's slot allows. The
        message stands without it if the chart fails (logged where it is drawn)."""

        def draw() -> None:
            png = chart()
            if not png:
                return
            # `attach`, not `upload`: the message is posted and recorded; a file that fails
            # now is retried on its own and must not fail (and repeat) the sync.
            self._slack.attach(
                location.channel,
                Attachment(
                    filename=f"{incident_id}-signals.png", title="Affected signals", content=png
                ),
                thread_ts=location.thread_ts,
                wait=False,
            )
            self._lanes.submit(
                incident_id,
                lambda: self._send_files(incident_id, location.channel),
                Origin(what=f"chart of {incident_id}", incident_id=incident_id),
            )

        self._charts.submit(
            incident_id, draw, Origin(what=f"chart of {incident_id}", incident_id=incident_id)
        )

    def _send_files(self, incident_id: str, channel: str) -> None:
        try:
            self._slack.send_files(channel)  # `SlotBusy` parks the lane until the slot is free
        except SlackCallFailed as e:  # shutting down: the file stays queued for the retries
            logger.warning("incident %s: chart not sent: %s", incident_id, e)

    def _changed(self, key: tuple[str, str], message: Message) -> bool:
        with self._lock:
            return self._digests.get(key) != _digest(message)

    def _remember_digest(self, key: tuple[str, str], message: Message) -> None:
        digest = _digest(message)
        with self._lock:
            self._digests[key] = digest

    def _post_alerts_later(self, event: AlertsUpdated) -> None:
        def run() -> None:
            location = self._channels.locate(event.incident_id)
            if location is None:
                return  # the incident's first sync shows its alerts
            message = render_alerts_updated(event)
            try:
                posted = self._slack.post(
                    location.channel, message, thread_ts=location.thread_ts, wait=False
                )
            except SlackCallFailed as e:
                logger.warning("incident %s: alert update not posted: %s", event.incident_id, e)
                return
            self._channels.remember(
                event.incident_id,
                MessageKind.ALERTS,
                f"{event.incident_id}@{event.at.isoformat()}",
                location,
                posted.ts,
            )

        self._lanes.submit(
            event.incident_id,
            run,
            Origin(what=f"alerts of {event.incident_id}", incident_id=event.incident_id),
        )

    def _announce_later(self, incident: Incident, channel: str) -> None:
        """Announce the incident in the incidents channel, on a lane of its own. A failed post
        is tried again (`ANNOUNCE_TRIES`, then at the incident's next sync, which finds no
        announcement recorded): an announcement is a message like the others, never lost."""
        with self._lock:
            if incident.id in self._announcing:
                return  # queued or parked already
            self._announcing.add(incident.id)
        tries = itertools.count(1)

        def run() -> None:
            parked = False
            try:
                self._channels.announce(incident, channel)
            except SlotBusy:
                parked = True
                raise
            except SlackCallFailed as e:
                attempt = next(tries)
                if e.transient and attempt < ANNOUNCE_TRIES:
                    parked = True
                    raise RunLater(
                        f"announcement of {incident.id} failed ({e.error})",
                        ANNOUNCE_RETRY_S * attempt,
                    ) from e
                logger.warning(
                    "incident %s: not announced (%s); its next sync tries again",
                    incident.id,
                    e.error,
                )
            finally:
                if not parked:
                    with self._lock:
                        self._announcing.discard(incident.id)

        self._lanes.submit(
            ANNOUNCE_LANE, run, Origin(what=f"announce {incident.id}", incident_id=incident.id)
        )

    def wait_idle(self, timeout_s: float) -> bool:
        """No sync and no chart queued or running (a chart queues a file for the lanes)."""
        return all(
            lanes.wait_idle(timeout_s)
            for lanes in (self._lanes, self._charts, self._lanes)  # syncs queue charts, and back
        )

    def close(self) -> None:
        """Stop drawing: a chart not drawn yet is dropped (its message stands without it)."""
        self._charts.close(timeout_s=2.0)
