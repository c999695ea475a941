"""The App Home on the local workspace: what each viewer sees, from storage and the lab."""

from __future__ import annotations

from typing import Any

from agents.model import IncidentState
from bot.home import HomeAction
from bot.ids import ActionId
from bot.render import PlanButton
from lab.slack.blocks import check_view
from storage.records import StoredApproval
from tests.bot.commands.stand import TIMEOUT, Stand


def open_home(stand: Stand, user: str, *, after: str = "") -> dict[str, Any]:
    """Open the Home tab as `user` and wait for the view the app publishes."""
    stand.ws.open_app_home(user)

    def published() -> dict[str, Any] | None:
        view = stand.ws.home_view(user)
        return view if view is not None and view.get("id") != after else None

    return stand.ws.wait_until(published, TIMEOUT)


def buttons(view: dict[str, Any], action_id: str) -> list[str]:
    found = []
    for block in view["blocks"]:
        elements = block.get("elements", []) if block["type"] == "actions" else []
        if block.get("accessory"):
            elements = [block["accessory"]]
        found += [e["value"] for e in elements if e.get("action_id") == action_id]
    return found


def test_approvals_wait_for_the_approvers_who_have_not_approved_yet(home: Stand) -> None:
    incident = home.seed_incident(state=IncidentState.AWAITING_APPROVAL)
    plan = home.seed_plan(incident)
    expected = PlanButton(plan_id=plan.id, content_hash=plan.content_hash).value()
    home.store.approvals.add(
        StoredApproval(
            id="appr-bob",
            plan_id=plan.id,
            content_hash=plan.content_hash,
            user_id="U0BOB0002",
            created_at=home.now,
            expires_at=plan.expires_at or home.now,
        )
    )

    alice = open_home(home, "alice")  # in @sre-approvers, has not approved
    assert check_view(alice) == []
    assert "Waiting for your approval* (1)" in str(alice["blocks"])
    assert buttons(alice, ActionId.APPROVE) == [expected]
    assert buttons(alice, ActionId.REJECT) == [expected]
    assert "1/2 approvals" not in str(alice["blocks"])  # medium risk: one approver is enough
    assert "1/1 approvals" in str(alice["blocks"])

    bob = open_home(home, "bob")  # approved already
    assert "Waiting for your approval* (0)" in str(bob["blocks"])
    carol = open_home(home, "carol")  # not an approver
    assert buttons(carol, ActionId.APPROVE) == []
    # Everyone sees the open incident itself.
    for view in (alice, bob, carol):
        assert incident.id in str(view["blocks"])
        assert "Awaiting approval" in str(view["blocks"])


def test_committed_transactions_carry_the_undo_button(home: Stand) -> None:
    tx = home.commit_scale("frontend", 3)
    view = open_home(home, "carol")
    assert buttons(view, ActionId.UNDO) == [tx]
    assert check_view(view) == []


def test_refresh_publishes_what_changed(home: Stand) -> None:
    first = open_home(home, "alice")
    assert "Open incidents* (0)" in str(first["blocks"])
    incident = home.seed_incident(state=IncidentState.DIAGNOSING)
    home.ws.click_in_view("alice", first["id"], HomeAction.REFRESH)

    def shows_it() -> dict[str, Any] | None:
        view = home.ws.home_view("alice")
        return view if view is not None and incident.id in str(view["blocks"]) else None

    refreshed = home.ws.wait_until(shows_it, TIMEOUT)
    assert "Open incidents* (1)" in str(refreshed["blocks"])
    assert "Diagnosing" in str(refreshed["blocks"])
