"""Configuring, starting and stopping the workspace; its Python API's own errors."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from slack_sdk import WebClient

from lab.slack import InteractionError, SlackWorkspace, TokenKind, WorkspaceConfig


def test_config_from_plain_data() -> None:
    config = WorkspaceConfig.from_dict(
        {
            "team_name": "Acme",
            "users": [
                {"id": "U1", "name": "ana", "real_name": "Ana", "is_admin": True},
                {"id": "U2", "name": "ben"},
            ],
            "groups": [{"id": "S1", "handle": "approvers", "members": ["ana", "U2"]}],
            "channels": [
                {"name": "ops", "members": ["*"]},
                {"name": "vault", "members": ["ana"], "is_private": True},
            ],
            "extra_tokens": [
                {"token": "xoxp-ana", "kind": "user", "user_id": "U1", "scopes": ["chat:write"]}
            ],
            "commands": ["/stratus", "/oncall"],
        }
    )
    assert config.extra_tokens[0].kind is TokenKind.USER
    with SlackWorkspace(config) as ws:
        client = WebClient(base_url=ws.api_url, token=ws.config.bot_token)
        assert client.team_info()["team"]["name"] == "Acme"
        assert client.usergroups_users_list(usergroup="S1")["users"] == ["U1", "U2"]
        assert ws.channel("ops")["num_members"] == 3  # both people and the bot
        # A user token posts as its user.
        as_ana = WebClient(base_url=ws.api_url, token="xoxp-ana")
        assert as_ana.chat_postMessage(channel="ops", text="from ana")["message"]["user"] == "U1"


def test_config_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "workspace.yaml"
    path.write_text(
        "team_name: Night shift\n"
        "users:\n  - {id: U9, name: nia, real_name: Nia, is_admin: true}\n"
        "groups: []\n"
        "channels:\n  - {name: ops, members: ['*']}\n",
        encoding="utf-8",
    )
    config = WorkspaceConfig.from_yaml(path)
    assert config.team_name == "Night shift"
    assert config.users[0].is_admin and config.channels[0].members == ("*",)


def test_config_errors() -> None:
    with pytest.raises(ValueError, match="unknown workspace config keys: colour"):
        WorkspaceConfig.from_dict({"colour": "blue"})
    with pytest.raises(ValueError, match="unknown user"):
        SlackWorkspace(
            WorkspaceConfig.from_dict({"groups": [{"id": "S1", "handle": "x", "members": ["zed"]}]})
        )


def test_start_stop_and_no_restart() -> None:
    before = set(threading.enumerate())
    ws = SlackWorkspace()
    with pytest.raises(RuntimeError, match="not running"):
        ws.post_as_user("alice", "general", "too early")
    url = ws.start()
    assert ws.start() == url and ws.api_url == f"{url}/api/"
    ws.stop()
    assert set(threading.enumerate()) == before
    with pytest.raises(RuntimeError, match="cannot be restarted"):
        ws.start()


def test_acting_as_someone_who_cannot(workspace: SlackWorkspace) -> None:
    with pytest.raises(InteractionError, match="user_not_found"):
        workspace.post_as_user("mallory", "general", "hi")
    with pytest.raises(InteractionError, match="not_a_valid_command"):
        workspace.slash_command("alice", "/deploy", "prod")
    with pytest.raises(InteractionError, match="message_not_found"):
        workspace.click("alice", "incidents", "1.000001", "approve")
    with pytest.raises(InteractionError, match="channel_not_found"):
        workspace.post_as_user("alice", "no-such-channel", "hi")


def test_clicks_find_the_right_button(workspace: SlackWorkspace) -> None:
    client = WebClient(base_url=workspace.api_url, token=workspace.config.bot_token)

    def undo(value: str) -> dict[str, Any]:
        return {
            "type": "button",
            "action_id": "undo",
            "value": value,
            "text": {"type": "plain_text", "text": value},
        }

    select = {
        "type": "static_select",
        "action_id": "plan",
        "options": [{"text": {"type": "plain_text", "text": "P-2"}, "value": "P-2"}],
    }
    # One Undo button per transaction, each in its own block (Slack refuses duplicate
    # action_ids within a block).
    blocks = [
        {"type": "actions", "block_id": "tx-1", "elements": [undo("tx-1")]},
        {"type": "actions", "block_id": "tx-2", "elements": [undo("tx-2"), select]},
    ]
    posted = client.chat_postMessage(channel="incidents", text="undo", blocks=blocks)
    second = workspace.click("carol", "incidents", posted["ts"], "undo", "tx-2")
    assert second.payload["actions"][0]["value"] == "tx-2"
    assert second.payload["actions"][0]["block_id"] == "tx-2"
    by_block = workspace.click("carol", "incidents", posted["ts"], "undo", block_id="tx-1")
    assert by_block.payload["actions"][0]["value"] == "tx-1"
    chosen = workspace.click("carol", "incidents", posted["ts"], "plan", "P-2")
    assert chosen.payload["actions"][0]["selected_option"]["value"] == "P-2"
    with pytest.raises(InteractionError, match="action_not_found"):
        workspace.click("carol", "incidents", posted["ts"], "approve")
    with pytest.raises(InteractionError, match="invalid_input"):
        workspace.click("carol", "incidents", posted["ts"], "plan", "P-9")


def test_wait_until_times_out_with_a_clear_error(workspace: SlackWorkspace) -> None:
    with pytest.raises(TimeoutError, match=r"not met within 0\.05 s"):
        workspace.wait_until(lambda: None, timeout=0.05)
