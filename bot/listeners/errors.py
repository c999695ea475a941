"""Bolt's global error handler: a listener that raised ends here (logged with its traceback by
the failure reporter; the person who clicked gets a mapped message, never a stack trace)."""

from __future__ import annotations

from typing import Any

from slack_bolt import App

from bot.listeners.payloads import dig
from bot.listeners.services import ListenerServices
from bot.workers import Origin


def register_error_handler(app: App, services: ListenerServices) -> None:
    def on_error(error: Exception, body: dict[str, Any]) -> None:
        channel = dig(body, "channel", "id") or dig(body, "container", "channel_id")
        user = dig(body, "user", "id") or body.get("user_id")
        kind = str(body.get("type") or ("command" if "command" in body else "request"))
        services.failures.report(
            error,
            Origin(
                what=f"slack {kind}",
                user=user if isinstance(user, str) else None,
                channel=channel if isinstance(channel, str) else body.get("channel_id"),
            ),
        )

    app.error(on_error)
