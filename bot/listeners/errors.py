"""Bolt's global error handler: a listener that raised ends here (logged with its traceback by
the failure reporter; the person who clicked gets a mapped message, never a stack trace)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App

from bot.listeners.payloads import dig
from bot.workers import Origin

if TYPE_CHECKING:
    from bot.services import Services


def report(services: Services, error: Exception, body: dict[str, Any]) -> None:
    """Log the error with its traceback and tell the person who acted, in one sentence."""
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


def register_error_handler(app: App, services: Services) -> None:
    def on_error(error: Exception, body: dict[str, Any]) -> None:
        report(services, error, body)

    app.error(on_error)


Listener = Callable[[Ack, dict[str, Any]], None]


def acked_first(services: Services, fn: Listener) -> Listener:
    """A listener that acks first, whose later errors are reported here instead of raised.

    slack_bolt's thread runner, when a listener raises after `ack()`, sets the request's ack
    response back to None in its error path (`ack.response = response`, with `response` None
    "since already acknowledged"). If that happens before the runner's wait loop looks (it
    polls every 10 ms), the click is never acknowledged: Bolt logs "didn't call ack()" and
    Slack shows the person an error. A stale Reject (the plan lookup fails within
    microseconds of the ack) lost that race on a loaded machine. Caught here, the error never
    reaches the runner, and the person gets the same one sentence Bolt's handler would give."""

    def listener(ack: Ack, body: dict[str, Any]) -> None:
        try:
            fn(ack, body)
        except Exception as error:  # noqa: BLE001 - reported, as Bolt's handler would
            report(services, error, body)

    listener.__name__ = fn.__name__
    listener.__qualname__ = fn.__qualname__
    return listener
