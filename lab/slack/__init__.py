"""A local Slack workspace: the Web API, Socket Mode and HTTP-mode delivery, and a web page.

No Slack emulator exists that the real `slack_sdk`/`slack_bolt` can talk to, so this is one:
the workspace speaks Slack's wire protocol (the lab never imports the Slack SDKs), delivers
events, interactions and slash commands the way Slack does, and shows channels, threads,
Block Kit, modals and the App Home tab in a browser for `stratus demo`.
"""

from lab.slack.config import (
    ChannelSpec,
    TokenKind,
    TokenSpec,
    UserGroupSpec,
    UserSpec,
    WorkspaceConfig,
)
from lab.slack.delivery.outcome import Delivery, EnvelopeKind, Transport
from lab.slack.errors import ApiError, InteractionError, SlackLabError
from lab.slack.limits import ApiCall
from lab.slack.workspace import SlackWorkspace

__all__ = [
    "ApiCall",
    "ApiError",
    "ChannelSpec",
    "Delivery",
    "EnvelopeKind",
    "InteractionError",
    "SlackLabError",
    "SlackWorkspace",
    "TokenKind",
    "TokenSpec",
    "Transport",
    "UserGroupSpec",
    "UserSpec",
    "WorkspaceConfig",
]
