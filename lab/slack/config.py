"""What the local workspace starts with: its team, people, groups, channels and the app.

Tests and the demo describe a workspace as values (or a YAML-ish dict through
`WorkspaceConfig.from_dict`), never by poking the running server. The defaults give a small
on-call team — two approvers, an admin and someone without approval rights — so the demo and
most tests need no configuration at all.

Delivery mode follows the app's settings at api.slack.com: with a `request_url` the workspace
POSTs signed requests to it (HTTP mode); without one it waits for a Socket Mode connection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml


class TokenKind(StrEnum):
    BOT = "bot"  # xoxb-: acts as the app's bot user
    USER = "user"  # xoxp-: acts as a workspace user
    APP = "app"  # xapp-: app-level, only for apps.connections.open


#: Every scope the Stratus bot asks for in its manifest. Deliberately without
#: `chat:write.public`, so posting where the bot is not a member fails as it would in a
#: workspace that installed the app with the manifest's scopes.
DEFAULT_BOT_SCOPES: tuple[str, ...] = (
    "app_mentions:read",
    "channels:history",
    "channels:join",
    "channels:manage",
    "channels:read",
    "chat:write",
    "commands",
    "files:read",
    "files:write",
    "groups:history",
    "groups:read",
    "groups:write",
    "im:history",
    "im:read",
    "im:write",
    "pins:read",
    "pins:write",
    "reactions:read",
    "reactions:write",
    "team:read",
    "usergroups:read",
    "users:read",
)

DEFAULT_BOT_EVENTS: tuple[str, ...] = (
    "app_home_opened",
    "app_mention",
    "member_joined_channel",
    "message.channels",
    "message.groups",
    "message.im",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class UserSpec:
    id: str
    name: str  # the handle, as in @alice
    real_name: str = ""
    title: str = ""  # shown in the page's "who am I" picker ("approver", "viewer", ...)
    is_admin: bool = False
    is_owner: bool = False
    email: str = ""
    tz: str = "UTC"


@dataclass(frozen=True, slots=True, kw_only=True)
class UserGroupSpec:
    id: str
    handle: str  # as in @sre-approvers
    name: str = ""
    description: str = ""
    members: tuple[str, ...] = ()  # user ids or handles


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelSpec:
    name: str
    id: str = ""  # generated when empty
    is_private: bool = False
    members: tuple[str, ...] = ()  # user ids or handles; "*" means every user
    bot_member: bool = True
    topic: str = ""
    purpose: str = ""
    is_general: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenSpec:
    """A token besides the app's own bot and app tokens, e.g. a bot token installed with
    fewer scopes (what `stratus doctor` must notice) or a user token."""

    token: str
    kind: TokenKind = TokenKind.BOT
    scopes: tuple[str, ...] = DEFAULT_BOT_SCOPES
    user_id: str = ""  # for user tokens: whom the token acts as


def _default_users() -> tuple[UserSpec, ...]:
    return (
        UserSpec(
            id="U0ALICE01",
            name="alice",
            real_name="Alice Approver",
            title="SRE lead, approver",
            email="alice@example.test",
        ),
        UserSpec(
            id="U0BOB0002",
            name="bob",
            real_name="Bob Second",
            title="SRE, second approver",
            email="bob@example.test",
        ),
        UserSpec(
            id="U0CAROL03",
            name="carol",
            real_name="Carol Viewer",
            title="Developer, no approval rights",
            email="carol@example.test",
        ),
        UserSpec(
            id="U0DANA004",
            name="dana",
            real_name="Dana Admin",
            title="Workspace admin",
            is_admin=True,
            email="dana@example.test",
        ),
    )


def _default_groups() -> tuple[UserGroupSpec, ...]:
    return (
        UserGroupSpec(
            id="S0APPROVE1",
            handle="sre-approvers",
            name="SRE approvers",
            members=("alice", "bob"),
        ),
        UserGroupSpec(id="S0ONCALL01", handle="oncall", name="On call", members=("alice",)),
    )


def _default_channels() -> tuple[ChannelSpec, ...]:
    return (
        ChannelSpec(name="general", members=("*",), is_general=True, topic="Company-wide"),
        ChannelSpec(name="incidents", members=("*",), topic="Incidents opened by Stratus"),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceConfig:
    team_id: str = "T0LAB0001"
    team_name: str = "Stratus Lab"
    team_domain: str = "stratus-lab"
    app_id: str = "A0STRATUS1"
    app_name: str = "Stratus"
    bot_user_id: str = "U0STRATUS1"
    bot_id: str = "B0STRATUS1"
    bot_name: str = "stratus"
    # Credentials of the lab workspace only; they open nothing outside this process.
    bot_token: str = "xoxb-lab-bot-token"  # noqa: S105
    app_token: str = "xapp-lab-app-token"  # noqa: S105
    signing_secret: str = "lab-signing-secret"  # noqa: S105
    verification_token: str = "lab-verification-token"  # noqa: S105
    bot_scopes: tuple[str, ...] = DEFAULT_BOT_SCOPES
    app_scopes: tuple[str, ...] = ("connections:write",)
    extra_tokens: tuple[TokenSpec, ...] = ()
    users: tuple[UserSpec, ...] = field(default_factory=_default_users)
    groups: tuple[UserGroupSpec, ...] = field(default_factory=_default_groups)
    channels: tuple[ChannelSpec, ...] = field(default_factory=_default_channels)
    commands: tuple[str, ...] = ("/stratus",)
    bot_events: tuple[str, ...] = DEFAULT_BOT_EVENTS
    #: Echo the bot's own posts back as `message` events, as Slack does (Bolt drops them).
    echo_bot_messages: bool = True
    #: HTTP mode when set (e.g. "http://127.0.0.1:3000/slack/events"); Socket Mode otherwise.
    request_url: str | None = None
    ack_timeout_s: float = 3.0
    trigger_ttl_s: float = 3.0
    #: Slack retries an unacknowledged event at once, after a minute and after five minutes.
    event_retry_delays_s: tuple[float, ...] = (0.0, 60.0, 300.0)
    response_url_ttl_s: float = 1800.0
    response_url_max_uses: int = 5
    host: str = "127.0.0.1"
    port: int = 0
    #: What the page says about its clock, e.g. "lab time, 4× real time" when the workspace
    #: runs on a lab clock (message times then match the times in the app's messages).
    clock_note: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkspaceConfig:
        """Build a config from plain data (a parsed YAML file). Lists of users, groups,
        channels and tokens are mappings; unknown keys are an error, not ignored."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown workspace config keys: {', '.join(unknown)}")
        kwargs: dict[str, Any] = {}
        nested: dict[str, type[Any]] = {
            "users": UserSpec,
            "groups": UserGroupSpec,
            "channels": ChannelSpec,
            "extra_tokens": TokenSpec,
        }
        for key, value in data.items():
            if key in nested:
                kwargs[key] = tuple(_spec(nested[key], item) for item in value)
            elif isinstance(value, list):
                kwargs[key] = tuple(value)
            else:
                kwargs[key] = value
        return cls(**kwargs)

    @classmethod
    def from_yaml(cls, path: Path) -> WorkspaceConfig:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(data, Mapping):
            raise ValueError(f"{path}: a workspace config is a mapping of fields")
        return cls.from_dict(data)


def _spec(kind: type[Any], item: Mapping[str, Any]) -> Any:
    values: dict[str, Any] = {}
    for key, value in item.items():
        if isinstance(value, Sequence) and not isinstance(value, str):
            values[key] = tuple(value)
        elif key == "kind":
            values[key] = TokenKind(value)
        else:
            values[key] = value
    return kind(**values)
