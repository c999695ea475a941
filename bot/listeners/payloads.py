"""Slack's interaction payloads, parsed once into small values (the rest of the bot never
digs through Bolt's dicts)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class PayloadProblem(ValueError):
    """A payload without what the listener needs (a forged or truncated request)."""


def dig(body: Mapping[str, Any], *path: str) -> Any:
    value: Any = body
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Click:
    """A button click in a message."""

    user: str
    channel: str | None
    message_ts: str | None
    value: str
    trigger_id: str | None

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Click:
        user = dig(body, "user", "id")
        actions = body.get("actions")
        if not isinstance(user, str) or not isinstance(actions, list) or not actions:
            raise PayloadProblem("a block_actions payload without user or actions")
        value = actions[0].get("value") if isinstance(actions[0], Mapping) else None
        return cls(
            user=user,
            channel=dig(body, "channel", "id") or dig(body, "container", "channel_id"),
            message_ts=dig(body, "container", "message_ts"),
            value=str(value or ""),
            trigger_id=body.get("trigger_id"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Submission:
    """A modal submitted: who, which view, its private metadata and its input values."""

    user: str
    view_id: str
    private_metadata: str
    values: Mapping[str, Mapping[str, Any]]

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Submission:
        user = dig(body, "user", "id")
        view = body.get("view")
        if not isinstance(user, str) or not isinstance(view, Mapping):
            raise PayloadProblem("a view_submission payload without user or view")
        values = dig(view, "state", "values")
        return cls(
            user=user,
            view_id=str(view.get("id", "")),
            private_metadata=str(view.get("private_metadata", "")),
            values=values if isinstance(values, Mapping) else {},
        )

    def text(self, block_id: str, action_id: str) -> str:
        entry = self.values.get(block_id, {}).get(action_id, {})
        value = entry.get("value") if isinstance(entry, Mapping) else None
        return str(value or "")


def metadata_json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError as e:
        raise PayloadProblem("private_metadata is not JSON") from e
    if not isinstance(data, dict):
        raise PayloadProblem("private_metadata is not an object")
    return data
