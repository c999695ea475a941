"""Where an incident lives in Slack: its own channel, or a thread in the incidents channel.

Channel mode (the default) creates `#inc-<date>-<slug>` (from the incident id, so unique and
lowercase, ≤ 80 characters; `#inc-<date>-<cluster>-<slug>` when STRATUS_CLUSTER_NAME is set;
renamed after the root-cause service once the diagnosis names one, since the id's slug is the
symptom the alerts pointed at), sets its topic, invites the
responders — every approver of the namespace, user groups resolved to their members — posts
and pins the summary; the notifier then announces the incident in the incidents channel
(`announce`, in a lane of its own: twenty incidents at once share that channel's one post a
second, and the incidents' own messages must not queue behind it). Thread mode posts the
summary in the incidents channel and keeps everything else in its thread.

Everything here runs on the shared Slack lanes, so posts pass `wait=False`: a busy channel
slot raises `SlotBusy` before anything is posted, and the lane runs the step again later.

The summary's reference in `slack_messages` (kind `summary`) is where the incident's channel
and thread are remembered, so a restarted bot finds them.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass

from agents.model import Incident
from agents.policy import Policy
from agents.ports import Clock
from bot.config import UNNAMED_CLUSTER, ChannelMode, SlackSettings
from bot.directory import Directory
from bot.errors import SlackCallFailed
from bot.ids import MessageKind
from bot.render import Message, render_announce
from bot.slack_io import SlackIO
from storage import Store
from storage.records import StoredSlackMessage

logger = logging.getLogger(__name__)

#: Finding (and joining) #incidents after a transient failure: tries, and the pause before
#: the n-th retry (n × this). Both calls are safe to repeat; the post after them is not.
RESOLVE_TRIES = 3
RESOLVE_PAUSE_S = 1.0

NAME_MAX = 80
_NOT_NAME = re.compile(r"[^a-z0-9_-]+")
_CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{2,}$")


def channel_name(incident_id: str, attempt: int = 0, *, cluster: str = "") -> str:
    """`inc-<date>-<slug>` from an incident id (`INC-20260105-geo-3f2a`), with `-2`, `-3`...
    when the name is taken. A named cluster goes after the date (`inc-20260105-prod-geo-3f2a`):
    one workspace serves the deployments of several clusters, and a channel list should say
    which cluster each incident is in."""
    base = _NOT_NAME.sub("-", incident_id.lower()).strip("-_") or "incident"
    if not base.startswith("inc-"):
        base = f"inc-{base}"
    base = _with_cluster(base, cluster)
    suffix = f"-{attempt + 1}" if attempt else ""
    return base[: NAME_MAX - len(suffix)].rstrip("-") + suffix


_INCIDENT_ID = re.compile(r"^inc-(\d{8})-(.+)-([0-9a-f]{4,})$")
_DATED = re.compile(r"^inc-(\d{8})-(.+)$")


def _with_cluster(base: str, cluster: str) -> str:
    tag = _NOT_NAME.sub("-", cluster.lower()).strip("-_")[:20].rstrip("-_")
    if not tag or cluster == UNNAMED_CLUSTER:
        return base
    dated = _DATED.match(base)
    if dated is None:
        return f"inc-{tag}-{base.removeprefix('inc-')}"
    return f"inc-{dated.group(1)}-{tag}-{dated.group(2)}"


def root_cause_name(incident_id: str, service: str, attempt: int = 0, *, cluster: str = "") -> str:
    """The channel's name once the diagnosis names the root cause: the service the alerts
    pointed at (`inc-20260105-frontend-3f2a`) replaced by the root cause's
    (`inc-20260105-geo-3f2a`). Ids of another shape keep their name."""
    base = channel_name(incident_id)
    found = _INCIDENT_ID.match(base)
    root = _NOT_NAME.sub("-", service.lower()).strip("-_")[:20].rstrip("-")
    if found is None or not root:
        return channel_name(incident_id, attempt, cluster=cluster)
    date, _, suffix = found.groups()
    return channel_name(f"inc-{date}-{root}-{suffix}", attempt, cluster=cluster)


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    """Where an incident's messages go: a channel, and in thread mode the summary's thread."""

    channel: str
    thread_ts: str | None
    summary_ts: str


class IncidentChannels:
    def __init__(
        self,
        *,
        slack: SlackIO,
        store: Store,
        settings: SlackSettings,
        directory: Directory,
        policy: Policy,
        clock: Clock,
        bot_user_id: str,
    ) -> None:
        self._slack = slack
        self._store = store
        self._settings = settings
        self._directory = directory
        self._policy = policy
        self._clock = clock
        self._bot_user_id = bot_user_id
        self._incidents_channel: str | None = None
        self._named: set[str] = set()  # incidents whose channel follows the root cause
        self._lock = threading.Lock()

    def locate(self, incident_id: str) -> Location | None:
        rows = self._store.slack_messages.find(
            incident_id=incident_id, kind=MessageKind.SUMMARY.value
        )
        if not rows:
            return None
        row = rows[0]
        return Location(channel=row.channel, thread_ts=row.thread_ts, summary_ts=row.ts)

    def incidents_channel(self) -> str:
        """The id of STRATUS_INCIDENT_CHANNEL, joined if the bot is not in it yet."""
        with self._lock:
            if self._incidents_channel is not None:
                return self._incidents_channel
            ref = self._settings.incident_channel
            if _CHANNEL_ID.match(ref):
                channel = ref
            else:
                found = self._slack.find_channel(ref)
                if found is None:
                    raise SlackCallFailed("conversations.list", f"no channel #{ref}")
                channel, member = found
                if not member:
                    self._slack.join(channel)
            self._incidents_channel = channel
            return channel

    def open(self, incident: Incident, summary: Message) -> Location:
        """Create the incident's home in Slack and post its pinned summary (`SlotBusy` if the
        channel's slot is not free: nothing posted, call again). In channel mode the caller
        then `announce`s it."""
        if self._settings.channel_mode is ChannelMode.THREAD:
            channel = self.incidents_channel()
            posted = self._slack.post(channel, summary, wait=False)
            location = Location(channel=posted.channel, thread_ts=posted.ts, summary_ts=posted.ts)
        else:
            channel = self._create_channel(incident)
            posted = self._slack.post(channel, summary, wait=False)
            location = Location(channel=posted.channel, thread_ts=None, summary_ts=posted.ts)
        self.remember(incident.id, MessageKind.SUMMARY, incident.id, location, posted.ts)
        try:
            self._slack.pin(location.channel, posted.ts)
        except SlackCallFailed as e:
            logger.warning("incident %s: cannot pin the summary: %s", incident.id, e.error)
        if self._settings.channel_mode is ChannelMode.CHANNEL:
            self._invite_responders(incident, location.channel)
        return location

    @property
    def announces(self) -> bool:
        """Whether a new incident is announced in the incidents channel (channel mode)."""
        return self._settings.channel_mode is ChannelMode.CHANNEL

    def follow_root_cause(self, incident: Incident, service: str) -> None:
        """Name the incident's channel after its diagnosed root cause, not the symptom the
        alerts pointed at (`#inc-…-frontend-…` → `#inc-…-geo-…`), and say it in the topic.
        Once per incident and process; a failure is logged and the old name stays."""
        if self._settings.channel_mode is not ChannelMode.CHANNEL or not service:
            return
        with self._lock:
            if incident.id in self._named:
                return
            self._named.add(incident.id)
        location = self.locate(incident.id)
        if location is None:
            return
        cluster = incident.scope.cluster
        if root_cause_name(incident.id, service, cluster=cluster) == channel_name(
            incident.id, cluster=cluster
        ):
            return
        for attempt in range(10):
            name = root_cause_name(incident.id, service, attempt, cluster=cluster)
            try:
                self._slack.rename_channel(location.channel, name)
                break
            except SlackCallFailed as e:
                if e.error == "name_taken":
                    found = self._slack.find_channel(name)
                    if found is not None and found[0] == location.channel:
                        break  # renamed already (a restart)
                    continue
                logger.warning("incident %s: cannot rename its channel: %s", incident.id, e.error)
                return
        try:
            self._slack.set_topic(
                location.channel, f"{incident.id}: root cause {service} — {incident.title}"
            )
        except SlackCallFailed as e:
            logger.warning("incident %s: cannot set the topic: %s", incident.id, e.error)

    def remember(
        self,
        incident_id: str,
        kind: MessageKind,
        ref: str,
        location: Location,
        ts: str,
    ) -> StoredSlackMessage:
        """Store where a message is (kind and ref say what it shows)."""
        now = self._clock.now()
        return self._store.slack_messages.save(
            StoredSlackMessage(
                incident_id=incident_id,
                channel=location.channel,
                ts=ts,
                thread_ts=location.thread_ts,
                kind=kind.value,
                ref=ref,
                created_at=now,
                updated_at=now,
            )
        )

    def _create_channel(self, incident: Incident) -> str:
        for attempt in range(10):
            name = channel_name(incident.id, attempt, cluster=incident.scope.cluster)
            try:
                channel = self._slack.create_channel(name)
            except SlackCallFailed as e:
                if e.error != "name_taken":
                    raise
                found = self._slack.find_channel(name)
                if found is not None and found[1]:
                    # Ours from a run that died before remembering it: use it.
                    return found[0]
                continue
            topic = f"{incident.id}: {incident.title}"
            try:
                self._slack.set_topic(channel, topic)
            except SlackCallFailed as e:
                logger.warning("incident %s: cannot set the topic: %s", incident.id, e.error)
            return channel
        raise SlackCallFailed("conversations.create", "name_taken")

    def _invite_responders(self, incident: Incident, channel: str) -> None:
        policy = self._policy.for_namespace(incident.scope.namespace)
        approvers = {a for tier in policy.approvers.values() for a in tier}
        wanted = self._directory.members(approvers) - {self._bot_user_id}
        if not wanted:
            return
        try:
            missing = sorted(wanted - self._slack.members(channel))
            if missing:
                self._slack.invite(channel, missing)
        except SlackCallFailed as e:
            logger.warning("incident %s: cannot invite responders: %s", incident.id, e.error)

    def _resolved_incidents_channel(self) -> str:
        """`incidents_channel`, again after a transient failure: the announcement is posted
        once (nothing re-renders it), so a 503 on conversations.join lost it for good
        (issue 14's matrix, `slack:conversations.join` × 503). The pauses (1 s, then 2 s)
        happen only while Slack fails, on the announcements' own lane."""
        for attempt in range(RESOLVE_TRIES):
            try:
                return self.incidents_channel()
            except SlackCallFailed as e:
                if not e.transient or attempt == RESOLVE_TRIES - 1:
                    raise
                logger.info("finding #incidents failed (%s); try %d", e.error, attempt + 2)
                time.sleep(RESOLVE_PAUSE_S * (attempt + 1))
        raise AssertionError("unreachable")

    def announce(self, incident: Incident, channel: str) -> None:
        """Say in the incidents channel that `incident` opened in `channel` (`SlotBusy` if
        that channel's slot is not free: nothing posted, call again). Raises
        `SlackCallFailed` when it was not posted: the caller tries again."""
        where = self._resolved_incidents_channel()
        posted = self._slack.post(where, render_announce(incident, channel), wait=False)
        location = Location(channel=where, thread_ts=None, summary_ts=posted.ts)
        self.remember(incident.id, MessageKind.ANNOUNCE, incident.id, location, posted.ts)
