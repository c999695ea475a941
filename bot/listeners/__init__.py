"""Slack listeners: thin — parse the payload, acknowledge, hand the work to the incident
operations (or open a modal, which cannot wait)."""

from slack_bolt import App

from bot.listeners.actions import register_actions
from bot.listeners.errors import register_error_handler
from bot.listeners.services import ListenerServices
from bot.listeners.views import register_views


def register_listeners(app: App, services: ListenerServices) -> None:
    register_actions(app, services)
    register_views(app, services)
    register_error_handler(app, services)


__all__ = ["ListenerServices", "register_listeners"]
