"""The HTTP endpoints: the Alertmanager webhook, health, readiness, metrics, and (in HTTP
mode) Slack's requests.

    POST /alerts/alertmanager   200 with what was decided · 400 with the payload problem ·
                                503 when storage is down (Alertmanager retries)
    GET  /healthz               200 while the process serves
    GET  /readyz                200 when the database answers and Slack is connected, else 503
    GET  /metrics               Prometheus text format
    POST /slack/events          HTTP mode: Bolt verifies the signature (401 when forged or
                                older than five minutes) and answers within Slack's 3 s
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
from bot.http.server import MAX_BODY_BYTES
from bot.metrics import CONTENT_TYPE, BotMetrics
from storage import StorageError

logger = logging.getLogger(__name__)

ALERTS_PATH = "/alerts/alertmanager"
SLACK_PATH = "/slack/events"

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoints:
    ingest: Callable[[Sequence[Alert]], Detection]
    readiness: Callable[[], Mapping[str, bool]]
    metrics: BotMetrics
    executor: Executor
    bolt: App | None = None  # HTTP mode only

    def application(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(ALERTS_PATH, self.alerts)
        app.router.add_get("/healthz", self.healthz)
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
        raw = await request.read()
        try:
            message = parse_webhook_body(raw)
        except PayloadError as e:
            logger.info("webhook refused: %s", e)
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
        checks = dict(await self._blocking(self.readiness))
        ready = all(checks.values())
        return web.json_response({"ready": ready, "checks": checks}, status=200 if ready else 503)

    async def metrics_text(self, _request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})

    async def slack(self, request: web.Request) -> web.Response:
        bolt = self.bolt
        assert bolt is not None
        body = (await request.read()).decode("utf-8")
        bolt_request = BoltRequest(
            body=body,
            query=request.query_string,
            headers={k.lower(): [v] for k, v in request.headers.items()},
        )
        response = await self._blocking(lambda: bolt.dispatch(bolt_request))
        headers = {
            k: ", ".join(v) for k, v in response.headers.items() if k.lower() != "content-length"
        }
        return web.Response(
            status=response.status, body=response.body.encode("utf-8"), headers=headers
        )
