"""Posting a digest: the message, then its chart in the message's thread.

A scheduled digest covers the time since the previous digest of the same channel (an audit
record `digest` remembers each one), so a digest missed while the bot was down is not a gap in
the record — up to a week back. The first one, and `/stratus digest`, cover the last 24 hours.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from slack_sdk import WebClient

from agents.ports import Clock
from bot.chart_process import charts
from bot.digest.content import Digest, compute_digest
from bot.digest.render import digest_figures, digest_title, render_digest
from bot.errors import ChartFailed
from storage import Store
from storage.records import AuditVerb, StoredAudit

logger = logging.getLogger(__name__)

DEFAULT_PERIOD = timedelta(hours=24)
MAX_PERIOD = timedelta(days=7)
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class PostedDigest:
    channel: str  # id
    ts: str
    digest: Digest
    chart_file_id: str | None


def resolve_channel(client: WebClient, ref: str) -> str:
    """A channel id from an id or a public channel's name (`#team-sre` or `team-sre`); a
    private channel is given by its id (listing private channels needs another scope).
    Raises `LookupError`."""
    name = ref.lstrip("#")
    if _CHANNEL_ID.match(name):
        return name
    cursor: str | None = None
    while True:
        page = client.conversations_list(
            types="public_channel", exclude_archived=True, limit=200, cursor=cursor
        )
        for channel in page.get("channels") or []:
            if channel.get("name") == name:
                return str(channel["id"])
        cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
        if not cursor:
            raise LookupError(f"no channel named #{name} that the bot can see")


class DigestPoster:
    def __init__(
        self,
        *,
        client: WebClient,
        store: Store,
        cluster: str,
        namespaces: Sequence[str],
        clock: Clock,
    ) -> None:
        self._client = client
        self._store = store
        self._cluster = cluster
        self._namespaces = tuple(namespaces)
        self._clock = clock

    def _audit_scope(self, channel_id: str) -> str:
        return f"slack:{channel_id}"

    def period_start(self, channel_id: str, end: datetime, *, scheduled: bool) -> datetime:
        earliest = end - MAX_PERIOD
        if scheduled:
            scope = self._audit_scope(channel_id)
            recent = self._store.audit.query(
                verb=AuditVerb.DIGEST, scope=scope, since=earliest, until=end
            )
            previous = [r for r in recent if r.detail.get("scheduled")]
            if previous:
                return previous[-1].at
            older = self._store.audit.query(verb=AuditVerb.DIGEST, scope=scope, until=earliest)
            if any(r.detail.get("scheduled") for r in older):
                return earliest  # the bot was away for longer than a week: the last week
        return end - DEFAULT_PERIOD

    def compute(self, channel_id: str, *, scheduled: bool = False) -> Digest:
        end = self._clock.now()
        start = self.period_start(channel_id, end, scheduled=scheduled)
        return compute_digest(
            self._store, cluster=self._cluster, namespaces=self._namespaces, start=start, end=end
        )

    def post(self, channel: str, *, scheduled: bool = False) -> PostedDigest:
        """Compute and post the digest to `channel` (an id or a name). Raises `LookupError`
        for an unknown channel and `slack_sdk.errors.SlackApiError` when Slack refuses."""
        channel_id = resolve_channel(self._client, channel)
        digest = self.compute(channel_id, scheduled=scheduled)
        text, blocks = render_digest(digest).payload()
        posted = self._client.chat_postMessage(channel=channel_id, text=text, blocks=blocks)
        ts = str(posted["ts"])
        file_id = self._upload_chart(channel_id, ts, digest)
        self._store.audit.append(
            StoredAudit(
                at=digest.end,
                actor="stratus",
                verb=AuditVerb.DIGEST,
                scope=self._audit_scope(channel_id),
                detail={
                    "scheduled": scheduled,
                    "start": digest.start.isoformat(),
                    "end": digest.end.isoformat(),
                    "ts": ts,
                    "chart": file_id,
                },
            )
        )
        logger.info("digest posted to %s (%s → %s)", channel_id, digest.start, digest.end)
        return PostedDigest(channel=channel_id, ts=ts, digest=digest, chart_file_id=file_id)

    def _upload_chart(self, channel_id: str, ts: str, digest: Digest) -> str | None:
        figures = digest_figures(digest)
        if not figures:
            return None  # nothing happened: a chart of empty bars says nothing the text does not
        try:
            png = charts().digest_chart(figures, title=digest_title(digest))
        except ChartFailed as e:
            logger.warning("digest for %s posted without its chart: %s", channel_id, e)
            return None
        uploaded = self._client.files_upload_v2(
            channel=channel_id,
            thread_ts=ts,
            file=png,
            filename="stratus-digest.png",
            title=digest_title(digest),
        )
        file = uploaded.get("file") or {}
        return str(file.get("id")) if file.get("id") else None
