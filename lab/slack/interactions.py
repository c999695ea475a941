"""Acting as a workspace user: what the page does when someone clicks, and what tests call.

Each method checks what Slack's client would check before anything leaves it (the command
exists, the button is there, required fields are filled — else `InteractionError`), builds
the payload Slack would send (with a fresh `trigger_id` and `response_url`), delivers it, and
then does what Slack does with the app's acknowledgement: show a slash command's reply, apply
a modal's `response_action`, or tell the user the app did not answer.
"""

from __future__ import annotations

import logging
from typing import Any

from agents.model import JsonObject
from lab.slack.delivery.dispatcher import Dispatcher
from lab.slack.delivery.outcome import Delivery, EnvelopeKind
from lab.slack.elements import (
    ElementInputError,
    UserInput,
    action_entry,
    find_element,
    missing_required,
    state_values,
)
from lab.slack.errors import ApiError, InteractionError
from lab.slack.events import app_home_opened_event, member_joined_event, message_events
from lab.slack.records import Channel, Message, ResponseTarget, User
from lab.slack.responses import apply
from lab.slack.store import SLACKBOT, WorkspaceState
from lab.slack.views_flow import ViewFlow
from lab.slack.wire import message_json, user_ref_json, view_json

logger = logging.getLogger(__name__)

Inputs = dict[str, dict[str, UserInput]]


class Interactions:
    def __init__(self, state: WorkspaceState, dispatcher: Dispatcher) -> None:
        self.state = state
        self.dispatcher = dispatcher
        self.views = ViewFlow(state)

    # ------------------------------------------------------------------ lookups

    def user(self, ref: str) -> User:
        with self.state.lock:
            user = self.state.users.get(ref) or self.state.user_by_name(ref)
            if user is None or user.is_bot or user.id == SLACKBOT:
                raise InteractionError("user_not_found", f"no user {ref!r}")
            return user

    def channel(self, user: User, ref: str | None) -> Channel:
        with self.state.lock:
            if ref is None:
                channel = next(
                    (
                        c
                        for c in self.state.channels.values()
                        if not c.is_im and user.id in c.members
                    ),
                    None,
                )
            else:
                channel = self.state.find_channel(ref, allow_names=True)
            if channel is None or (
                (channel.is_private or channel.is_im) and user.id not in channel.members
            ):
                raise InteractionError("channel_not_found", f"no channel {ref!r} for {user.name}")
            return channel

    def _base(self, user: User) -> JsonObject:
        cfg = self.state.config
        return {
            "user": user_ref_json(self.state, user),
            "api_app_id": cfg.app_id,
            "token": cfg.verification_token,
            "team": {"id": cfg.team_id, "domain": cfg.team_domain},
            "enterprise": None,
            "is_enterprise_install": False,
        }

    def _response_url(self, token: str) -> str:
        return f"{self.state.base_url}/response/{token}"

    def slackbot_says(self, user: User, channel: Channel, text: str) -> None:
        """An ephemeral note from Slack itself, as when a command fails."""
        self.state.add_message(
            Message(
                ts=self.state.new_ts(),
                channel=channel.id,
                user=SLACKBOT,
                text=text,
                ephemeral_to=user.id,
            )
        )

    # ------------------------------------------------------------------ slash commands

    async def slash_command(
        self, user_ref: str, command: str, text: str = "", channel_ref: str | None = None
    ) -> Delivery:
        state, cfg = self.state, self.state.config
        user = self.user(user_ref)
        channel = self.channel(user, channel_ref)
        if not command.startswith("/"):
            command = f"/{command}"
        if command not in cfg.commands:
            raise InteractionError("not_a_valid_command", f"{command} is not a valid command")
        with state.lock:
            token = state.issue_response_url(
                target=ResponseTarget.COMMAND, user=user.id, channel=channel.id
            )
            payload: JsonObject = {
                "token": cfg.verification_token,
                "team_id": cfg.team_id,
                "team_domain": cfg.team_domain,
                "channel_id": channel.id,
                "channel_name": "directmessage" if channel.is_im else channel.name,
                "user_id": user.id,
                "user_name": user.name,
                "command": command,
                "text": text,
                "api_app_id": cfg.app_id,
                "is_enterprise_install": "false",
                "response_url": self._response_url(token),
                "trigger_id": state.issue_trigger(user.id),
            }
        delivery = await self.dispatcher.deliver(EnvelopeKind.SLASH_COMMANDS, payload)
        if not delivery.acked:
            self.slackbot_says(user, channel, f'{command} failed with the error "{delivery.error}"')
        elif delivery.ack_payload:
            self._respond(token, delivery.ack_payload, user, channel)
        return delivery

    def _respond(self, token: str, body: JsonObject, user: User, channel: Channel) -> None:
        with self.state.lock:
            record = self.state.response_urls[token]
            try:
                events = apply(self.state, record, body)
            except ApiError as e:
                # Slack shows the user that the app's reply was refused.
                self.slackbot_says(user, channel, f"The app's response was refused: {e.code}")
                return
        self.dispatcher.emit(events)

    # ------------------------------------------------------------------ block actions

    async def click(
        self,
        user_ref: str,
        channel_ref: str,
        message_ts: str,
        action_id: str,
        value: UserInput = None,
        *,
        block_id: str | None = None,
    ) -> Delivery:
        """A click (or a choice, for selects) on an element of a message or ephemeral."""
        state = self.state
        user = self.user(user_ref)
        channel = self.channel(user, channel_ref)
        with state.lock:
            message = state.message(channel.id, message_ts)
            ephemeral = False
            if message is None:
                message = state.ephemeral(channel.id, message_ts)
                ephemeral = message is not None
                if message is not None and message.ephemeral_to != user.id:
                    message = None
            if message is None:
                raise InteractionError(
                    "message_not_found", f"no message {message_ts} in {channel.name}"
                )
            entry = self._entry(message.blocks or [], action_id, value, block_id)
            token = state.issue_response_url(
                target=ResponseTarget.MESSAGE,
                user=user.id,
                channel=channel.id,
                original_ts=message.ts,
                original_ephemeral=ephemeral,
            )
            container: JsonObject = {
                "type": "message",
                "message_ts": message.ts,
                "channel_id": channel.id,
                "is_ephemeral": ephemeral,
            }
            if message.is_reply:
                container["thread_ts"] = message.thread_ts
            payload: JsonObject = {
                "type": "block_actions",
                **self._base(user),
                "container": container,
                "trigger_id": state.issue_trigger(user.id),
                "channel": {"id": channel.id, "name": channel.name},
                "state": {"values": {}},
                "response_url": self._response_url(token),
                "actions": [entry],
            }
            if not ephemeral:
                payload["message"] = message_json(state, message)
        return await self._interact(user, payload, channel=channel)

    def _entry(
        self, blocks: list[JsonObject], action_id: str, value: UserInput, block_id: str | None
    ) -> JsonObject:
        button_value = value if isinstance(value, str) else None
        found = find_element(blocks, action_id, value=button_value, block_id=block_id)
        if found is None:
            raise InteractionError("action_not_found", f"no element with action_id {action_id!r}")
        block_id, element = found
        if element.get("type") == "button" and element.get("url") and not element.get("action_id"):
            raise InteractionError("link_button", "a URL button opens a link; nothing is sent")
        try:
            return action_entry(block_id, element, value, action_ts=self.state.new_ts())
        except ElementInputError as e:
            raise InteractionError("invalid_input", str(e)) from None

    async def _interact(
        self, user: User, payload: JsonObject, *, channel: Channel | None
    ) -> Delivery:
        delivery = await self.dispatcher.deliver(EnvelopeKind.INTERACTIVE, payload)
        if not delivery.acked:
            note = f"{self.state.config.app_name} did not respond ({delivery.error})."
            if channel is not None:
                self.slackbot_says(user, channel, note)
            else:
                self.views.notice(user.id, note)
        return delivery

    async def click_in_view(
        self,
        user_ref: str,
        view_id: str,
        action_id: str,
        value: UserInput = None,
        inputs: Inputs | None = None,
        *,
        block_id: str | None = None,
    ) -> Delivery:
        """A click on an element of a modal or the App Home tab; `inputs` carries what the
        user has typed into the view so far (it becomes `view.state.values`)."""
        state = self.state
        user = self.user(user_ref)
        with state.lock:
            view = self.views.owned(user.id, view_id)
            entry = self._entry(view.blocks, action_id, value, block_id)
            self.views.remember(view, inputs or {})
            payload: JsonObject = {
                "type": "block_actions",
                **self._base(user),
                "container": {"type": "view", "view_id": view.id},
                "trigger_id": state.issue_trigger(user.id),
                "view": view_json(state, view),
                "actions": [entry],
            }
        return await self._interact(user, payload, channel=None)

    # ------------------------------------------------------------------ modals

    async def submit_view(self, user_ref: str, view_id: str, inputs: Inputs) -> Delivery:
        user = self.user(user_ref)
        with self.state.lock:
            view = self.views.owned(user.id, view_id)
            values = self._values(view.blocks, inputs)
            missing = missing_required(view.blocks, values)
            if missing:
                raise InteractionError(
                    "required_input", "required fields are empty", errors=missing
                )
            view.values = values
            payload: JsonObject = {
                "type": "view_submission",
                **self._base(user),
                "trigger_id": self.state.issue_trigger(user.id),
                "view": view_json(self.state, view),
                "response_urls": [],
            }
        delivery = await self._interact(user, payload, channel=None)
        if delivery.acked:
            self.views.apply_response_action(user.id, view_id, delivery.ack_payload or {})
        return delivery

    def _values(self, blocks: list[JsonObject], inputs: Inputs) -> dict[str, Any]:
        try:
            return state_values(blocks, inputs)
        except ElementInputError as e:
            raise InteractionError("invalid_input", str(e)) from None

    async def close_view(self, user_ref: str, view_id: str) -> Delivery | None:
        """The user closes (cancels) a modal: the whole stack with `clear_on_close`, else
        the top view. `view_closed` goes to the app when the view asked for it."""
        user = self.user(user_ref)
        with self.state.lock:
            view = self.views.owned(user.id, view_id)
            payload: JsonObject = {
                "type": "view_closed",
                **self._base(user),
                "view": view_json(self.state, view),
                "is_cleared": view.clear_on_close,
            }
            notify = view.notify_on_close
            self.views.close(user.id, view, clear=view.clear_on_close)
        if not notify:
            return None
        return await self.dispatcher.deliver(EnvelopeKind.INTERACTIVE, payload)

    async def reload_client(self, user_ref: str) -> None:
        """The user reloaded the page: like a Slack client restarting, it shows no modal
        (Slack sends no `view_closed` for this; the app's views simply end)."""
        user = self.user(user_ref)
        with self.state.lock:
            stack = self.state.modal_stacks.get(user.id, [])
            if not stack:
                return
            stack.clear()
        self.state.touch()

    # ------------------------------------------------------------------ events

    async def open_app_home(self, user_ref: str) -> Delivery | None:
        user = self.user(user_ref)
        with self.state.lock:
            event = app_home_opened_event(self.state, user.id)
        return await self.dispatcher.deliver_event(event)

    async def post_as_user(
        self, user_ref: str, channel_ref: str, text: str, thread_ts: str | None = None
    ) -> str:
        """A user writes a message; `message` (and `app_mention`) events follow for the app
        without holding the writer up."""
        state = self.state
        user = self.user(user_ref)
        channel = self.channel(user, channel_ref)
        if user.id not in channel.members:
            raise InteractionError("not_in_channel", f"{user.name} is not in #{channel.name}")
        if not text.strip():
            raise InteractionError("no_text", "an empty message is not sent")
        with state.lock:
            root = ""
            if thread_ts:
                parent = state.message(channel.id, thread_ts)
                if parent is None:
                    raise InteractionError("thread_not_found", f"no message {thread_ts}")
                root = parent.thread_ts if parent.is_reply else parent.ts
            message = state.add_message(
                Message(
                    ts=state.new_ts(),
                    channel=channel.id,
                    user=user.id,
                    text=text,
                    blocks=[_rich_text(state.new_id("b"), text)],
                    thread_ts=root,
                )
            )
            events = message_events(state, message)
        # Like Slack, the message is posted at once and the events follow on their own.
        self.dispatcher.emit(events)
        return message.ts

    async def join_channel(self, user_ref: str, channel_ref: str) -> None:
        state = self.state
        user = self.user(user_ref)
        channel = self.channel(user, channel_ref)
        with state.lock:
            if user.id in channel.members:
                return
            channel.members.add(user.id)
            events = member_joined_event(state, channel, user.id)
        state.touch()
        self.dispatcher.emit(events)


def _rich_text(block_id: str, text: str) -> JsonObject:
    """The rich_text block Slack's client attaches to every message a person writes."""
    return {
        "type": "rich_text",
        "block_id": block_id,
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
    }
