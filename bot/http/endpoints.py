"""The HTTP endpoints: the Alertmanager webhook, health, readiness, metrics, and (in HTTP
mode) Slack's requests.

    POST /alerts/alertmanager   401 unless Alertmanager's credentials match (`bot.http.auth`;
                                none configured: always 401) · 200 with what was decided ·
                                400 with the payload problem · 413 too large ·
                                503 when storage is down (Alertmanager retries)
    GET  /healthz               200 while the process serves
    GET  /readyz                200 when a database write succeeds and Slack accepts the token
                                (and, in Socket Mode, the socket is connected); else 503
                                with each failing check's reason (`bot.http.readiness`)
    GET  /metrics               Prometheus text format
    POST /slack/events          HTTP mode: `bot.http.slack_gate` checks size, signature,
                                replay and shape first (413/401/200/400, one WARNING line,
                                no traceback), then Bolt answers within Slack's 3 s

With `STRATUS_WEBHOOK_PORT` the webhook is served by an application of its own
(`application(webhook=True, others=False)`) on another port than `/slack/events`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TypeVar

from aiohttp import web
from slack_bolt import App
from slack_bolt.request import BoltRequest

from agents.detection import Detection, PayloadError, parse_webhook_body
from agents.model import Alert
from bot.http.auth import CHALLENGE, WebhookAuth
from bot.http.server import MAX_BODY_BYTES
from bot.http.slack_gate import SlackGate
from bot.metrics import CONTENT_TYPE, BotMetrics
from storage import StorageError

logger = logging.getLogger(__name__)

ALERTS_PATH = "/alerts/alertmanager"
SLACK_PATH = "/slack/events"

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoints:
    ingest: Callable[[Sequence[Alert]], Detection]
    readiness: Callable[[], Mapping[str, str]]  # check → "" when fine, else why not
    metrics: BotMetrics
    executor: Executor
    webhook_auth: WebhookAuth
    bolt: App | None = None  # HTTP mode only
    slack_gate: SlackGate | None = None  # HTTP mode only
    #: Who this replica is and who leads, for `/readyz` (a follower is ready: it serves).
    leadership: Callable[[], Mapping[str, object]] | None = None

    def application(self, *, webhook: bool = True, others: bool = True) -> web.Application:
        """The routes: the webhook, the others (health, readiness, metrics, Slack), or both.
        `/healthz` is on every application, so each port can be probed."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_get("/healthz", self.healthz)
        if webhook:
            app.router.add_post(ALERTS_PATH, self.alerts)
        if others:
            app.router.add_get("/readyz", self.readyz)
            app.router.add_get("/metrics", self.metrics_text)
            if self.bolt is not None:
                app.router.add_post(SLACK_PATH, self.slack)
        return app

    async def _blocking(self, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.executor, call)

    def _answer(self, status: int, body: Mapping[str, object]) -> web.Response:
        self.metrics.webhooks.labels(status=str(status)).inc()
        return web.json_response(dict(body), status=status)

    async def alerts(self, request: web.Request) -> web.Response:
        refused = self.webhook_auth.refusal(request.headers.get("Authorization"))
        if refused is not None:
            logger.warning("webhook refused from %s: 401 %s", request.remote, refused)
            self.metrics.webhooks.labels(status="401").inc()
            return web.json_response(
                {"error": "unauthorized"}, status=401, headers={"WWW-Authenticate": CHALLENGE}
            )
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            logger.warning("webhook refused from %s: 413 body too large", request.remote)
            return self._answer(413, {"error": f"body larger than {MAX_BODY_BYTES} bytes"})
        try:
            message = parse_webhook_body(raw)
        except PayloadError as e:
            logger.warning("webhook refused from %s: 400 %s", request.remote, e)
            return self._answer(400, {"error": str(e)})
        try:
            detection = await self._blocking(lambda: self.ingest(message.alerts))
        except StorageError as e:
            logger.warning("webhook: storage unavailable: %s", e)
            return self._answer(503, {"error": f"storage unavailable: {e}"})
        return self._answer(
            200,
            {
                "alerts": len(message.alerts),
                "opened": [i.id for i in detection.opened],
                "dispositions": {
                    d.fingerprint: d.disposition.value for d in detection.dispositions
                },
            },
        )

    async def healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(self, _request: web.Request) -> web.Response:
        reasons = dict(await self._blocking(self.readiness))
        checks = {name: not reason for name, reason in reasons.items()}
        ready = all(checks.values())
        body: dict[str, object] = {"ready": ready, "checks": checks}
        if self.leadership is not None:
            body["leader"] = dict(self.leadership())
        if not ready:
            body["reasons"] = {name: reason for name, reason in reasons.items() if reason}
        return web.json_response(body, status=200 if ready else 503)

    async def metrics_text(self, _request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})

    async def slack(self, request: web.Request) -> web.Response:
        bolt, gate = self.bolt, self.slack_gate
        assert bolt is not None and gate is not None
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            logger.warning("slack request refused from %s: 413 body too large", request.remote)
            return web.Response(status=413)
        headers = {k.lower(): v for k, v in request.headers.items()}
        verdict = gate.check(raw, headers)
        if not verdict.passes:
            logger.warning(
                "slack request %s from %s: %d %s",
                "ignored" if verdict.status == 200 else "refused",
                request.remote,
                verdict.status,
                verdict.reason,
            )
            return web.Response(status=verdict.status)
        bolt_request = BoltRequest(
            body=raw.decode("utf-8"),
            query=request.query_string,
            headers={k: [v] for k, v in headers.items()},
        )
        response = await self._blocking(lambda: bolt.dispatch(bolt_request))
        headers = {
            k: ", ".join(v) for k, v in response.headers.items() if k.lower() != "content-length"
        }
        return web.Response(
            status=response.status, body=response.body.encode("utf-8"), headers=headers
        )
