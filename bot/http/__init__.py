"""The bot's HTTP side: one aiohttp server (`server`) for the Alertmanager webhook, health,
readiness, metrics and, in HTTP mode, Slack's requests (`endpoints`)."""

from bot.http.endpoints import ALERTS_PATH, SLACK_PATH, Endpoints
from bot.http.server import HttpServer

__all__ = ["ALERTS_PATH", "SLACK_PATH", "Endpoints", "HttpServer"]
