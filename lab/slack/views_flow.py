"""Modal stacks and Home tabs, on the workspace's side of the wire.

The app changes views through `views.*` (lab.slack.api.views) or by answering a submission
with a `response_action`; the user changes them by submitting or closing. Both paths end here,
so a view is always created, refreshed and stacked the same way. A user's inputs are kept
across `views.update` when the input keeps its block_id and action_id, as in Slack.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from lab.slack.blocks import check_view, normalise
from lab.slack.elements import ElementInputError, UserInput, state_values
from lab.slack.errors import ApiError, InteractionError
from lab.slack.records import View, ViewType
from lab.slack.store import WorkspaceState

logger = logging.getLogger(__name__)

MAX_STACK = 3


def fill(state: WorkspaceState, view: View, body: dict[str, Any]) -> None:
    """Set a view's content from a view payload (already checked)."""
    blocks = normalise(list(body.get("blocks", [])), lambda: state.new_id("b"))
    previous = view.values
    fresh = state_values(blocks, {})
    for block_id, actions in fresh.items():
        for action_id, value in actions.items():
            kept = previous.get(block_id, {}).get(action_id)
            if kept is not None and kept.get("type") == value["type"]:
                actions[action_id] = kept
    view.blocks = blocks
    view.values = fresh
    view.title = body.get("title")
    view.submit = body.get("submit")
    view.close = body.get("close")
    view.callback_id = str(body.get("callback_id", ""))
    view.private_metadata = str(body.get("private_metadata", ""))
    view.clear_on_close = bool(body.get("clear_on_close", False))
    view.notify_on_close = bool(body.get("notify_on_close", False))
    view.errors = {}
    view.hash = f"{state.now()}.{secrets.token_hex(4)}"


def external_id_taken(state: WorkspaceState, external_id: str, *, besides: str = "") -> bool:
    return bool(external_id) and any(
        v.external_id == external_id and v.id != besides for v in state.views.values()
    )


def new_view(
    state: WorkspaceState,
    body: dict[str, Any],
    *,
    user: str,
    root: str = "",
    previous: str | None = None,
) -> View:
    external_id = str(body.get("external_id", ""))
    if external_id_taken(state, external_id):
        raise ApiError("duplicate_external_id")
    view = View(
        id=state.new_id("V"),
        type=ViewType(body["type"]),
        user=user,
        blocks=[],
        hash="",
        external_id=external_id,
        previous_view_id=previous,
    )
    view.root_view_id = root or view.id
    fill(state, view, body)
    state.views[view.id] = view
    return view


class ViewFlow:
    def __init__(self, state: WorkspaceState) -> None:
        self.state = state

    def owned(self, user_id: str, view_id: str) -> View:
        """A view the user has in front of them: the top modal or their Home tab."""
        view = self.state.views.get(view_id)
        stack = self.state.modal_stacks.get(user_id, [])
        visible = (stack and stack[-1] == view_id) or self.state.home_views.get(user_id) == view_id
        if view is None or view.user != user_id or not visible:
            raise InteractionError("view_not_found", f"view {view_id} is not open for {user_id}")
        return view

    def remember(self, view: View, inputs: dict[str, dict[str, UserInput]]) -> None:
        """Merge what the user typed into the view's state."""
        if not inputs:
            return
        try:
            given = state_values(view.blocks, inputs)
        except ElementInputError as e:
            raise InteractionError("invalid_input", str(e)) from None
        for block_id, actions in inputs.items():
            for action_id in actions:
                if action_id in given.get(block_id, {}):
                    view.values.setdefault(block_id, {})[action_id] = given[block_id][action_id]

    def close(self, user_id: str, view: View, *, clear: bool) -> None:
        with self.state.lock:
            stack = self.state.modal_stacks.get(user_id, [])
            if clear:
                stack.clear()
            elif view.id in stack:
                del stack[stack.index(view.id) :]
        self.state.touch()

    def notice(self, user_id: str, text: str) -> None:
        self.state.add_notice(user_id, text)

    def apply_response_action(self, user_id: str, view_id: str, ack: dict[str, Any]) -> None:
        """What Slack does with a view_submission's acknowledgement."""
        state = self.state
        action = ack.get("response_action")
        with state.lock:
            view = state.views[view_id]
            stack = state.modal_stacks.setdefault(user_id, [])
            if action in (None, ""):
                self.close(user_id, view, clear=False)
            elif action == "clear":
                self.close(user_id, view, clear=True)
            elif action == "errors":
                errors = ack.get("errors")
                view.errors = {str(k): str(v) for k, v in (errors or {}).items()}
            elif action in ("update", "push"):
                body = ack.get("view")
                problems = check_view(body)
                if problems or not isinstance(body, dict) or body.get("type") != "modal":
                    self.notice(user_id, f"The app answered with an invalid view: {problems}")
                elif action == "update":
                    fill(state, view, body)
                elif len(stack) >= MAX_STACK:
                    self.notice(
                        user_id, "The app tried to push a fourth view (push_limit_reached)."
                    )
                else:
                    root = stack[0] if stack else view_id
                    try:
                        pushed = new_view(state, body, user=user_id, root=root, previous=view_id)
                    except ApiError as e:
                        self.notice(user_id, f"The app's view was refused: {e.code}")
                    else:
                        stack.append(pushed.id)
            else:
                self.notice(
                    user_id, f"The app answered with an unknown response_action {action!r}."
                )
        state.touch()
