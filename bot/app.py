"""`build_app(services) -> App`: the Bolt app, its listeners and the surfaces that plug in.

The app acknowledges every request within Slack's 3 seconds — listeners ack first and hand
their work to `services.incidents` — and Bolt verifies request signatures in HTTP mode
(a forged signature or a timestamp older than five minutes is answered 401 before any
listener runs). The global error handler is `bot.listeners.errors`.

Surfaces owned elsewhere register themselves here when their module is present:

* `bot.commands.register_commands(app, services, after_detection=...)` — `/stratus`;
* `bot.home.register_home(app, services)` — the App Home tab.

Both receive the same `Services` (see `bot.services`).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from slack_bolt import App

from bot.commands import register_commands
from bot.home import register_home
from bot.listeners import register_listeners
from bot.listeners.fallbacks import register_fallbacks
from bot.services import Services

logger = logging.getLogger(__name__)

LISTENER_THREADS = 16


def build_app(services: Services) -> App:
    settings = services.settings.slack
    app = App(
        client=services.slack.client,
        signing_secret=settings.signing_secret or "",
        token_verification_enabled=True,  # auth.test now: a wrong token fails at start
        process_before_response=False,  # ack first; the listener finishes in Bolt's thread
        logger=logging.getLogger("bot.bolt"),
        listener_executor=ThreadPoolExecutor(
            max_workers=LISTENER_THREADS, thread_name_prefix="stratus-bolt"
        ),
    )
    register_listeners(app, services)
    register_surfaces(app, services)
    register_fallbacks(app)
    _give_acks(app, services.options.ack_timeout_s)
    return app


def _give_acks(app: App, seconds: int) -> None:
    """How long Bolt waits for a listener's `ack()` before it gives up and answers nothing.
    Slack's own limit is 3 s, Bolt's default; only a composition root that tolerates a slower
    ack (the lab harness on a starved CI machine, whose workspace waits longer) raises it.
    Bolt offers the setting per listener only for workflow functions, hence the loop."""
    for listener in app._listeners:  # private: no public way to set it for actions
        listener.ack_timeout = seconds


def register_surfaces(app: App, services: Services) -> None:
    """`/stratus` and the App Home."""
    register_commands(app, services, after_detection=services.incidents.after_detection)
    register_home(app, services)
