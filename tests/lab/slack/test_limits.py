"""Rate limits (injected 429s, the per-channel posting limit), scopes, and the call record."""

from __future__ import annotations

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from lab.slack import SlackWorkspace, TokenSpec, WorkspaceConfig


def test_injected_429_is_retried_and_posts_exactly_once(workspace: SlackWorkspace) -> None:
    client = WebClient(
        base_url=workspace.api_url,
        token=workspace.config.bot_token,
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=2)],
    )
    workspace.inject_rate_limit("chat.postMessage", count=1, retry_after=1)
    response = client.chat_postMessage(channel="incidents", text="once")
    assert response["ok"]
    assert [m["text"] for m in workspace.messages("incidents")] == ["once"]
    calls = workspace.calls("chat.postMessage")
    assert [(c.status, c.error) for c in calls] == [(429, "ratelimited"), (200, "")]


def test_without_a_retry_handler_the_429_surfaces(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    workspace.inject_rate_limit("conversations.history", count=2, retry_after=7)
    channel = workspace.channel("incidents")["id"]
    for _ in range(2):
        with pytest.raises(SlackApiError) as caught:
            client.conversations_history(channel=channel)
        assert caught.value.response.status_code == 429
        assert caught.value.response.headers["Retry-After"] == "7"
        assert caught.value.response["error"] == "ratelimited"
    assert client.conversations_history(channel=channel)["ok"]


def test_posting_limit_per_channel(workspace: SlackWorkspace, client: WebClient) -> None:
    workspace.set_posting_limit(1.0)
    assert client.chat_postMessage(channel="incidents", text="first")["ok"]
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="incidents", text="too soon")
    assert caught.value.response.status_code == 429
    assert int(caught.value.response.headers["Retry-After"]) >= 1
    # Another channel has its own budget.
    assert client.chat_postMessage(channel="general", text="elsewhere")["ok"]
    workspace.set_posting_limit(None)
    assert client.chat_postMessage(channel="incidents", text="limit off")["ok"]
    assert [m["text"] for m in workspace.messages("incidents")] == ["first", "limit off"]


def test_posting_limit_with_the_retry_handler_paces_posts(workspace: SlackWorkspace) -> None:
    client = WebClient(
        base_url=workspace.api_url,
        token=workspace.config.bot_token,
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=3)],
    )
    workspace.set_posting_limit(2.0, burst=1)
    for text in ("a", "b"):
        client.chat_postMessage(channel="incidents", text=text)
    assert [m["text"] for m in workspace.messages("incidents")] == ["a", "b"]
    assert [c.status for c in workspace.calls("chat.postMessage")] == [200, 429, 200]


def test_scopes_header_and_missing_scope() -> None:
    narrow = TokenSpec(token="xoxb-narrow", scopes=("channels:read", "users:read"))
    with SlackWorkspace(WorkspaceConfig(extra_tokens=(narrow,))) as ws:
        client = WebClient(base_url=ws.api_url, token="xoxb-narrow")
        auth = client.auth_test()
        assert auth.headers["x-oauth-scopes"] == "channels:read,users:read"
        with pytest.raises(SlackApiError) as caught:
            client.chat_postMessage(channel="incidents", text="x")
        body = caught.value.response
        assert body["error"] == "missing_scope"
        assert body["needed"] == "chat:write"
        assert body["provided"] == "channels:read,users:read"
        assert body.headers["x-accepted-oauth-scopes"] == "chat:write"
        # The app's own token has the manifest's scopes.
        full = WebClient(base_url=ws.api_url, token=ws.config.bot_token).auth_test()
        assert "chat:write" in full.headers["x-oauth-scopes"].split(",")


def test_scopes_can_change_at_runtime(workspace: SlackWorkspace, client: WebClient) -> None:
    workspace.set_scopes(workspace.config.bot_token, ("chat:write",))
    with pytest.raises(SlackApiError) as caught:
        client.conversations_create(name="inc-x", is_private=True)
    assert caught.value.response["needed"] == "groups:write"
    assert client.auth_test().headers["x-oauth-scopes"] == "chat:write"


def test_call_record(workspace: SlackWorkspace, client: WebClient) -> None:
    client.chat_postMessage(channel="incidents", text="recorded")
    with pytest.raises(SlackApiError):
        client.chat_postMessage(channel="nowhere", text="x")
    calls = workspace.calls("chat.postMessage")
    assert [c.ok for c in calls] == [True, False]
    assert calls[0].args["text"] == "recorded"
    assert "token" not in calls[0].args
    assert calls[0].token_kind == "bot"
    assert calls[1].error == "channel_not_found"
    assert calls[0].at <= calls[1].at
    assert {c.method for c in workspace.calls()} == {"chat.postMessage"}
