"""What happened when the workspace handed the app something."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class EnvelopeKind(StrEnum):
    EVENTS_API = "events_api"
    INTERACTIVE = "interactive"
    SLASH_COMMANDS = "slash_commands"


class Transport(StrEnum):
    SOCKET_MODE = "socket_mode"
    HTTP = "http"


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """One attempt to deliver one payload.

    `acked` means the app acknowledged within the ack timeout (3 s, like Slack);
    `ack_payload` is what it acknowledged with (a slash command's response, a modal's
    `response_action`), `latency_s` how long the ack took. On failure `error` says why, in
    Slack's words where it has them (`dispatch_failed`, `operation_timeout`, `http_status_401`).
    """

    kind: EnvelopeKind
    transport: Transport
    envelope_id: str
    payload: dict[str, Any]
    retry_attempt: int = 0
    retry_reason: str = ""
    acked: bool = False
    ack_payload: dict[str, Any] | None = None
    latency_s: float | None = None
    status: int | None = None  # HTTP mode: the app's response status
    error: str = ""
    at: float = 0.0  # workspace clock when the attempt started

    @property
    def payload_type(self) -> str:
        """`block_actions`, `view_submission`, `event_callback`, or "" for commands."""
        return str(self.payload.get("type", ""))

    @property
    def event_type(self) -> str:
        """For events: the inner event's type (`message`, `app_home_opened`, ...)."""
        event = self.payload.get("event")
        return str(event.get("type", "")) if isinstance(event, dict) else ""
