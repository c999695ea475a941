"""`BotRuntime`: one process serving everything — the Bolt app (Socket Mode through
slack_sdk's built-in client, or HTTP mode at `/slack/events` on our own aiohttp server), the
webhook, health and metrics endpoints, and the services' background work.

    runtime = BotRuntime(build_services(settings))
    runtime.start()        # returns once everything listens
    ...
    runtime.stop()         # Ctrl-C / SIGTERM in `stratus run`
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from slack_bolt import App
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk import WebClient

from bot.app import build_app
from bot.config import SlackMode
from bot.http.auth import WebhookAuth
from bot.http.endpoints import ALERTS_PATH, Endpoints
from bot.http.readiness import SlackAuth, database_write
from bot.http.server import HttpServer, blocking_pool
from bot.http.slack_gate import SlackGate
from bot.services import Services
from bot.socket_close import close_socket_mode

logger = logging.getLogger(__name__)


class BotRuntime:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.app: App | None = None
        self._http: HttpServer | None = None
        self._webhook_http: HttpServer | None = None  # with STRATUS_WEBHOOK_PORT
        self._socket: SocketModeHandler | None = None
        self._executor = blocking_pool()
        self.http_port = 0
        self.webhook_port = 0
        self._slack_auth = SlackAuth(services.slack.client)

    @property
    def http_url(self) -> str:
        return f"http://{self.services.settings.http.host}:{self.http_port}"

    @property
    def webhook_url(self) -> str:
        """Where Alertmanager posts (its own port with `STRATUS_WEBHOOK_PORT`)."""
        return f"http://{self.services.settings.http.host}:{self.webhook_port}{ALERTS_PATH}"

    def start(self) -> None:
        services = self.services
        settings = services.settings
        self.app = app = build_app(services)
        http_mode = settings.slack.mode is SlackMode.HTTP
        endpoints = Endpoints(
            ingest=services.incidents.ingest,
            readiness=self.readiness,
            metrics=services.metrics,
            executor=self._executor,
            webhook_auth=WebhookAuth(settings=settings.webhook),
            bolt=app if http_mode else None,
            slack_gate=SlackGate(settings.slack.signing_secret or "") if http_mode else None,
            leadership=self.leadership,
        )
        if not settings.webhook.configured:
            logger.warning(
                "no webhook credentials (STRATUS_WEBHOOK_TOKEN or STRATUS_WEBHOOK_USERNAME/"
                "PASSWORD): %s refuses every call",
                ALERTS_PATH,
            )
        apart = settings.webhook.port is not None
        self._http = HttpServer(
            endpoints.application(webhook=not apart),
            host=settings.http.host,
            port=settings.http.port,
        )
        self.http_port = self.webhook_port = self._http.start()
        if settings.webhook.port is not None:
            self._webhook_http = HttpServer(
                endpoints.application(others=False),
                host=settings.http.host,
                port=settings.webhook.port,
            )
            self.webhook_port = self._webhook_http.start()
        services.start()
        if not http_mode:
            self._socket = SocketModeHandler(
                app,
                settings.slack.app_token,
                web_client=WebClient(base_url=settings.slack.api_url),
                logger=logging.getLogger("bot.socket_mode"),
            )
            self._socket.connect()  # type: ignore[no-untyped-call]
        logger.info("stratus is running (%s mode)", settings.slack.mode.value)

    def leadership(self) -> Mapping[str, object]:
        """`/readyz`'s `leader`: this replica, whether it leads, the lease's holder."""
        status = self.services.leadership()
        return {
            "identity": status.identity,
            "leading": status.leading,
            "holder": status.holder,
            "token": status.token,
        }

    def readiness(self) -> Mapping[str, str]:
        """Each check's reason for not being ready ("" when it is): the bot can write to its
        database, Slack accepts its token, and (Socket Mode) the socket is connected."""
        slack = self._slack_auth()
        if not slack and self._socket is not None and not self._socket.client.is_connected():
            slack = "socket mode is not connected"
        return {"database": database_write(self.services.store.db), "slack": slack}

    def stop(self) -> None:
        if self._socket is not None:
            close_socket_mode(self._socket.client)
            self._socket = None
        for server in (self._webhook_http, self._http):
            if server is not None:
                server.stop()
        self._http = self._webhook_http = None
        self.services.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
        logger.info("stratus stopped")
