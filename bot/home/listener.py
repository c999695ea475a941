"""The App Home listeners: publish the viewer's Home when they open it or press Refresh.

Publishing reads storage only (no cluster or metrics reads) but is still the heaviest thing a
click does here, so it does not run in Bolt's listener threads: the listeners acknowledge and
hand the user to `HomePublisher`, which publishes on lanes of its own (two threads, a lane a
user) and coalesces (`Lanes.submit_once`) — a user who presses Refresh five times while a
publish waits gets one publish, of the newest state. A burst of Home traffic then cannot
delay the acknowledgements of other requests.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.commands.context import CommandContext
from bot.home.content import home_content
from bot.home.render import HomeAction, render_home
from bot.workers import Lanes, Origin

if TYPE_CHECKING:
    from bot.services import Services

logger = logging.getLogger(__name__)

PUBLISH_THREADS = 2


class HomePublisher:
    def __init__(self, ctx: CommandContext, client: WebClient) -> None:
        self._ctx = ctx
        self._client = client
        self._lanes = Lanes(workers=PUBLISH_THREADS, name="stratus-home")

    def publish(self, user_id: str, *, notice: str = "") -> None:
        """Publish `user_id`'s Home now, in the caller's thread."""
        content = home_content(self._ctx, self._ctx.people.person(user_id), notice=notice)
        self._client.views_publish(user_id=user_id, view=render_home(content))
        logger.debug(
            "home published for %s: %d waiting, %d open, %d transactions",
            user_id,
            len(content.waiting),
            len(content.incidents),
            len(content.transactions),
        )

    def publish_later(self, user_id: str) -> None:
        """Publish soon on the publisher's threads; a publish already waiting covers this."""
        if not user_id:
            return
        self._lanes.submit_once(
            user_id,
            lambda: self._run(user_id),
            Origin(what=f"home of {user_id}", user=user_id),
            once=user_id,
        )

    def _run(self, user_id: str) -> None:
        try:
            self.publish(user_id)
        except SlackApiError as e:
            logger.warning("home of %s not published: %s", user_id, e.response.get("error"))
        except Exception:  # the worker boundary: log with the traceback, keep the thread
            logger.exception("home of %s not published", user_id)

    def close(self) -> None:
        self._lanes.close(timeout_s=0)

    # ---------------------------------------------------------------------- listeners

    def on_opened(self, event: dict[str, Any]) -> None:
        if event.get("tab", "home") != "home":
            return  # the Messages tab
        self.publish_later(str(event.get("user", "")))

    def on_refresh(self, ack: Ack, body: dict[str, Any]) -> None:
        ack()
        self.publish_later(str((body.get("user") or {}).get("id", "")))


def register_home(app: App, services: Services) -> HomePublisher:
    """Register the App Home on `app`; returns the publisher (to re-publish a Home)."""
    publisher = HomePublisher(CommandContext.of(services), app.client)
    app.event("app_home_opened")(publisher.on_opened)
    app.action(HomeAction.REFRESH.value)(publisher.on_refresh)
    return publisher
