"""Hand a payload to the app over whichever transport it uses, and keep score.

Slack's contract: the app acknowledges within three seconds. An unacknowledged *event* is
retried (at once, after a minute, after five minutes; `retry_attempt`/`retry_reason` or the
`X-Slack-Retry-*` headers say so); an unacknowledged *interaction* or *slash command* is not
retried — the user sees an error instead. Every attempt is recorded as a `Delivery` so tests
and benchmarks can read ack latencies.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Coroutine
from typing import Any

from agents.model import JsonObject
from lab.slack.delivery.http_mode import HttpSender
from lab.slack.delivery.outcome import Delivery, EnvelopeKind, Transport
from lab.slack.delivery.socket_mode import SocketHub
from lab.slack.events import event_callback
from lab.slack.records import OutgoingEvent
from lab.slack.store import WorkspaceState

logger = logging.getLogger(__name__)


class Dispatcher:
    def __init__(self, state: WorkspaceState, hub: SocketHub, sender: HttpSender) -> None:
        self.state = state
        self.hub = hub
        self.sender = sender
        self.request_url: str | None = state.config.request_url
        self.ack_timeout_s = state.config.ack_timeout_s
        self.retry_delays_s = state.config.event_retry_delays_s
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def transport(self) -> Transport:
        return Transport.HTTP if self.request_url else Transport.SOCKET_MODE

    def deliveries(self, kind: EnvelopeKind | None = None) -> list[Delivery]:
        with self._lock:
            return [d for d in self._deliveries if kind is None or d.kind is kind]

    async def deliver(
        self,
        kind: EnvelopeKind,
        payload: JsonObject,
        *,
        retry_attempt: int = 0,
        retry_reason: str = "",
    ) -> Delivery:
        """One attempt, waiting at most the ack timeout."""
        envelope_id = str(uuid.uuid4())
        started = self.state.clock()
        status: int | None = None
        if self.request_url:
            ack, status = await self.sender.post(
                self.request_url,
                kind=kind,
                payload=payload,
                timeout=self.ack_timeout_s,
                retry_attempt=retry_attempt,
                retry_reason=retry_reason,
            )
        else:
            envelope: JsonObject = {
                "envelope_id": envelope_id,
                "type": kind.value,
                "payload": payload,
                "accepts_response_payload": _accepts_response(kind, payload),
            }
            if kind is EnvelopeKind.EVENTS_API:
                envelope["retry_attempt"] = retry_attempt
                envelope["retry_reason"] = retry_reason
            ack = await self.hub.send(envelope, timeout=self.ack_timeout_s)
        delivery = Delivery(
            kind=kind,
            transport=self.transport,
            envelope_id=envelope_id,
            payload=payload,
            retry_attempt=retry_attempt,
            retry_reason=retry_reason,
            acked=ack.acked,
            ack_payload=ack.payload,
            latency_s=ack.latency_s,
            status=status,
            error=ack.error,
            at=started,
        )
        with self._lock:
            self._deliveries.append(delivery)
        if not ack.acked:
            logger.info("delivery of %s failed: %s", kind.value, ack.error)
        self.state.touch()
        return delivery

    def subscribed(self, event: OutgoingEvent) -> bool:
        return event.subscription in self.state.config.bot_events

    async def deliver_event(self, event: OutgoingEvent) -> Delivery | None:
        """First attempt now; if it fails, retries follow in the background."""
        if not self.subscribed(event):
            return None
        with self.state.lock:
            payload = event_callback(self.state, event.event)
        first = await self.deliver(EnvelopeKind.EVENTS_API, payload)
        if not first.acked and self.retry_delays_s:
            self._spawn(self._retry(payload, first))
        return first

    def emit(self, events: list[OutgoingEvent]) -> None:
        """Deliver events without waiting (called from the server's loop)."""
        for event in events:
            if self.subscribed(event):
                self._spawn(self._deliver_quietly(event))

    async def _deliver_quietly(self, event: OutgoingEvent) -> None:
        await self.deliver_event(event)

    async def _retry(self, payload: JsonObject, first: Delivery) -> None:
        reason = _retry_reason(first)
        for attempt, delay in enumerate(self.retry_delays_s, start=1):
            await asyncio.sleep(delay)
            retried = await self.deliver(
                EnvelopeKind.EVENTS_API, payload, retry_attempt=attempt, retry_reason=reason
            )
            if retried.acked:
                return

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.sender.close()


def _accepts_response(kind: EnvelopeKind, payload: JsonObject) -> bool:
    if kind is EnvelopeKind.SLASH_COMMANDS:
        return True
    return kind is EnvelopeKind.INTERACTIVE and payload.get("type") in (
        "view_submission",
        "block_suggestion",
    )


def _retry_reason(failed: Delivery) -> str:
    """Slack's words for why an event is sent again."""
    if failed.error == "operation_timeout":
        return "http_timeout" if failed.transport is Transport.HTTP else "timeout"
    if failed.error == "dispatch_failed":
        return "connection_failed"
    return "http_error"
