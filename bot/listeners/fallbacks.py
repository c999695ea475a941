"""Events the app is subscribed to (its manifest asks for them) but the core does not act on.
Registered last, so a surface that handles one of them comes first; without these, Bolt
answers 404 and logs a warning for every member joining an incident channel."""

from __future__ import annotations

from slack_bolt import App

IGNORED_EVENTS = ("member_joined_channel", "message", "app_mention")


def register_fallbacks(app: App) -> None:
    def ignore() -> None:
        return None

    for event in IGNORED_EVENTS:
        app.event(event)(ignore)
