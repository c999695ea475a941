"""One Web API call in flight: its arguments, its token, and what it asks to emit.

Slack accepts arguments as a form (every value a string; JSON-valued arguments such as
`blocks` arrive JSON-encoded) or as a JSON body (values keep their types). `Args` reads both
the same way. `Call` carries the token's grant, checks scopes the way Slack reports them
(`missing_scope` with `needed` and `provided`), and collects the events the call causes
(a bot post echoed as a `message` event, a `member_joined_channel` after an invite), which
the endpoint hands to delivery once the call has answered.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agents.model import JsonObject
from lab.slack.config import TokenKind
from lab.slack.errors import ApiError, invalid_arguments
from lab.slack.records import Channel, OutgoingEvent, TokenGrant
from lab.slack.store import WorkspaceState

T = TypeVar("T")


class Args:
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def has(self, name: str) -> bool:
        return self.values.get(name) not in (None, "")

    def text(self, name: str, default: str = "") -> str:
        value = self.values.get(name)
        if value is None:
            return default
        return value if isinstance(value, str) else json.dumps(value)

    def required(self, name: str, *, error: str | None = None) -> str:
        value = self.text(name)
        if not value:
            if error is not None:
                raise ApiError(error)
            raise invalid_arguments(f"missing required field: {name}")
        return value

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.values.get(name)
        if value is None or value == "":
            return default
        if isinstance(value, bool):
            return value
        return str(value).lower() in ("1", "true", "yes")

    def number(self, name: str, default: int) -> int:
        value = self.values.get(name)
        if value is None or value == "":
            return default
        try:
            return int(value)
        except (TypeError, ValueError):
            raise invalid_arguments(f"{name} must be an integer") from None

    def decoded(self, name: str, *, error: str = "invalid_arguments") -> Any:
        """A JSON-valued argument: decoded from a form string, or as sent in a JSON body."""
        value = self.values.get(name)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            if error == "invalid_arguments":
                raise invalid_arguments(f"{name} must be valid JSON") from None
            raise ApiError(error) from None

    def redacted(self) -> dict[str, Any]:
        return {k: v for k, v in self.values.items() if k != "token"}


@dataclass(slots=True, kw_only=True)
class Call:
    method: str
    args: Args
    grant: TokenGrant
    state: WorkspaceState
    events: list[OutgoingEvent] = field(default_factory=list)
    accepted_scopes: list[str] = field(default_factory=list)

    @property
    def actor(self) -> str:
        """The user (the bot user for bot tokens) the call acts as."""
        return self.grant.user_id

    @property
    def is_bot(self) -> bool:
        return self.grant.kind is TokenKind.BOT

    def require_scope(self, *any_of: str) -> None:
        self.accepted_scopes.extend(s for s in any_of if s not in self.accepted_scopes)
        if not any(scope in self.grant.scopes for scope in any_of):
            raise ApiError(
                "missing_scope",
                needed=",".join(any_of),
                provided=",".join(self.grant.scopes),
            )

    def require_channel_scope(self, channel: Channel, *, family: str) -> None:
        """`family` is the scope's suffix: "read", "history", "write"/"manage"..."""
        if channel.is_im:
            self.require_scope(f"im:{'write' if family == 'manage' else family}")
        elif channel.is_private:
            self.require_scope(f"groups:{'write' if family == 'manage' else family}")
        else:
            self.require_scope(f"channels:{family}")

    def channel(self, ref: str, *, allow_names: bool = False) -> Channel:
        """The channel `ref` names, as this token can see it: a private channel the actor
        is not in does not exist for it (`channel_not_found`)."""
        if not ref:
            raise ApiError("channel_not_found")
        channel = self.state.find_channel(ref, allow_names=allow_names)
        if channel is None:
            raise ApiError("channel_not_found")
        if (channel.is_private or channel.is_im) and self.actor not in channel.members:
            raise ApiError("channel_not_found")
        return channel

    def emit(self, subscription: str, event: JsonObject) -> None:
        self.events.append(OutgoingEvent(subscription=subscription, event=event))


def paginate(
    items: list[T], args: Args, *, default_limit: int, max_limit: int
) -> tuple[list[T], str]:
    """A page of `items` and the cursor of the next one ("" at the end), Slack style."""
    limit = args.number("limit", default_limit)
    limit = default_limit if limit <= 0 else min(limit, max_limit)
    offset = 0
    cursor = args.text("cursor")
    if cursor:
        try:
            kind, _, number = base64.b64decode(cursor).decode().partition(":")
            offset = int(number)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise ApiError("invalid_cursor") from None
        if kind != "next" or offset < 0:
            raise ApiError("invalid_cursor")
    page = items[offset : offset + limit]
    more = offset + limit < len(items)
    next_cursor = base64.b64encode(f"next:{offset + limit}".encode()).decode() if more else ""
    return page, next_cursor
