"""views.*: triggers that expire and are single-use, modal stacks, hashes, the Home tab.

No app is connected here: a slash command still yields a trigger_id (in the payload the
workspace tried to deliver), which is all views.open needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lab.slack import InteractionError, SlackWorkspace


def error_of(call: Callable[[], Any]) -> str:
    with pytest.raises(SlackApiError) as caught:
        call()
    return str(caught.value.response["error"])


def trigger(ws: SlackWorkspace, user: str = "alice") -> str:
    return str(ws.slash_command(user, "/stratus", "declare").payload["trigger_id"])


def modal(title: str = "Declare", **extra: Any) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": "declare",
        "title": {"type": "plain_text", "text": title},
        "submit": {"type": "plain_text", "text": "Declare"},
        "blocks": [
            {
                "type": "input",
                "block_id": "summary",
                "label": {"type": "plain_text", "text": "Summary"},
                "element": {"type": "plain_text_input", "action_id": "text"},
            },
            {
                "type": "input",
                "block_id": "severity",
                "optional": True,
                "label": {"type": "plain_text", "text": "Severity"},
                "element": {
                    "type": "static_select",
                    "action_id": "pick",
                    "initial_option": {
                        "text": {"type": "plain_text", "text": "SEV2"},
                        "value": "2",
                    },
                    "options": [
                        {"text": {"type": "plain_text", "text": "SEV1"}, "value": "1"},
                        {"text": {"type": "plain_text", "text": "SEV2"}, "value": "2"},
                    ],
                },
            },
        ],
        **extra,
    }


def test_open_puts_a_modal_in_front_of_the_triggering_user(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    view = client.views_open(trigger_id=trigger(workspace, "bob"), view=modal())["view"]
    assert view["id"].startswith("V") and view["root_view_id"] == view["id"]
    assert view["state"]["values"]["severity"]["pick"]["selected_option"]["value"] == "2"
    assert [v["id"] for v in workspace.views("bob")] == [view["id"]]
    assert workspace.views("alice") == []


def test_triggers_are_single_use_and_checked(workspace: SlackWorkspace, client: WebClient) -> None:
    fresh = trigger(workspace)
    client.views_open(trigger_id=fresh, view=modal())
    assert (
        error_of(lambda: client.views_open(trigger_id=fresh, view=modal()))
        == "exchanged_trigger_id"
    )
    assert (
        error_of(lambda: client.views_open(trigger_id="1.2.3", view=modal()))
        == "invalid_trigger_id"
    )


def test_triggers_expire(fast_workspace: SlackWorkspace) -> None:
    client = WebClient(base_url=fast_workspace.api_url, token=fast_workspace.config.bot_token)
    old = trigger(fast_workspace)
    time.sleep(fast_workspace.config.trigger_ttl_s + 0.1)
    assert error_of(lambda: client.views_open(trigger_id=old, view=modal())) == "expired_trigger_id"


def test_invalid_views_are_refused(workspace: SlackWorkspace, client: WebClient) -> None:
    with pytest.raises(SlackApiError) as caught:
        client.views_open(trigger_id=trigger(workspace), view=modal(title="t" * 25))
    assert caught.value.response["error"] == "invalid_arguments"
    assert "title" in caught.value.response["response_metadata"]["messages"][0]


def test_push_update_and_hash(workspace: SlackWorkspace, client: WebClient) -> None:
    root = client.views_open(trigger_id=trigger(workspace), view=modal())["view"]
    pushed = client.views_push(trigger_id=trigger(workspace), view=modal("Step 2"))["view"]
    assert pushed["previous_view_id"] == root["id"] and pushed["root_view_id"] == root["id"]
    client.views_push(trigger_id=trigger(workspace), view=modal("Step 3"))
    assert error_of(lambda: client.views_push(trigger_id=trigger(workspace), view=modal("4"))) == (
        "push_limit_reached"
    )
    assert len(workspace.views("alice")) == 3
    updated = client.views_update(view_id=root["id"], hash=root["hash"], view=modal("Renamed"))
    assert updated["view"]["title"]["text"] == "Renamed"
    assert updated["view"]["hash"] != root["hash"]
    stale = lambda: client.views_update(view_id=root["id"], hash=root["hash"], view=modal("Again"))  # noqa: E731
    assert error_of(stale) == "hash_conflict"
    assert error_of(lambda: client.views_update(view_id="V0NONE", view=modal())) == "not_found"


def test_update_by_external_id(workspace: SlackWorkspace, client: WebClient) -> None:
    client.views_open(trigger_id=trigger(workspace), view=modal(external_id="inc-7-declare"))
    updated = client.views_update(external_id="inc-7-declare", view=modal("Updated"))
    assert updated["view"]["external_id"] == "inc-7-declare"
    assert workspace.views("alice")[0]["title"]["text"] == "Updated"
    duplicate = lambda: client.views_open(  # noqa: E731
        trigger_id=trigger(workspace), view=modal(external_id="inc-7-declare")
    )
    assert error_of(duplicate) == "duplicate_external_id"


def test_publish_home_tab(workspace: SlackWorkspace, client: WebClient) -> None:
    home = {
        "type": "home",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "*1 open*"}}],
    }
    first = client.views_publish(user_id="U0ALICE01", view=home)["view"]
    assert first["type"] == "home"
    stored = workspace.home_view("alice")
    assert stored is not None and stored["blocks"][0]["text"]["text"] == "*1 open*"
    again = client.views_publish(user_id="U0ALICE01", view=home, hash=first["hash"])["view"]
    assert again["id"] == first["id"]
    stale = lambda: client.views_publish(user_id="U0ALICE01", view=home, hash=first["hash"])  # noqa: E731
    assert error_of(stale) == "hash_conflict"
    assert workspace.home_view("bob") is None
    assert error_of(lambda: client.views_publish(user_id="U0ALICE01", view=modal())) == (
        "invalid_arguments"
    )


def test_required_inputs_are_checked_before_anything_is_sent(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    view = client.views_open(trigger_id=trigger(workspace), view=modal())["view"]
    sent = len(workspace.deliveries())
    with pytest.raises(InteractionError) as caught:
        workspace.submit_view("alice", view["id"], {"text": None})
    assert caught.value.errors == {"summary": "Please complete this required field."}
    assert len(workspace.deliveries()) == sent
    with pytest.raises(InteractionError):
        workspace.submit_view("alice", view["id"], {"pick": "9"})  # no such option
    with pytest.raises(InteractionError):
        workspace.submit_view("bob", view["id"], {"text": "not bob's modal"})


def test_submission_the_app_does_not_answer_leaves_the_modal_open(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    view = client.views_open(trigger_id=trigger(workspace), view=modal())["view"]
    delivery = workspace.submit_view("alice", view["id"], {"text": "frontend is down"})
    assert not delivery.acked and delivery.error == "dispatch_failed"
    values = delivery.payload["view"]["state"]["values"]
    assert values["summary"]["text"] == {"type": "plain_text_input", "value": "frontend is down"}
    assert values["severity"]["pick"]["selected_option"]["value"] == "2"
    assert [v["id"] for v in workspace.views("alice")] == [view["id"]]
    assert workspace.notices("alice") == ["Stratus did not respond (dispatch_failed)."]


def test_closing_a_modal(workspace: SlackWorkspace, client: WebClient) -> None:
    root = client.views_open(trigger_id=trigger(workspace), view=modal())["view"]
    pushed = client.views_push(trigger_id=trigger(workspace), view=modal("Step 2"))["view"]
    assert workspace.close_view("alice", pushed["id"]) is None  # no notify_on_close
    assert [v["id"] for v in workspace.views("alice")] == [root["id"]]
    workspace.close_view("alice", root["id"])
    assert workspace.views("alice") == []
