"""Slack listeners: thin — parse the payload, acknowledge, hand the work to the incident
operations (or open a modal, which cannot wait)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slack_bolt import App

from bot.listeners.actions import register_actions
from bot.listeners.errors import register_error_handler
from bot.listeners.views import register_views

if TYPE_CHECKING:
    from bot.services import Services


def register_listeners(app: App, services: Services) -> None:
    register_actions(app, services)
    register_views(app, services)
    register_error_handler(app, services)


__all__ = ["register_listeners"]
