"""views.*: modals (a stack of up to three per user) and the App Home tab.

A modal opens only with a fresh `trigger_id` — one issued by a user's interaction, valid for
three seconds and exchangeable once — which is why Stratus must call `views.open` before it
does anything slow. `hash` guards updates against races as in Slack (`hash_conflict`).
"""

from __future__ import annotations

import time

from agents.model import JsonObject
from lab.slack.api.context import Call
from lab.slack.blocks import check_view
from lab.slack.errors import ApiError, invalid_arguments
from lab.slack.records import Trigger
from lab.slack.views_flow import MAX_STACK, external_id_taken, fill, new_view
from lab.slack.wire import view_json


def _view_arg(call: Call, *, kind: str | None) -> JsonObject:
    view = call.args.decoded("view")
    if view is None:
        raise invalid_arguments("missing required field: view")
    errors = check_view(view)
    if errors:
        raise invalid_arguments(*errors)
    assert isinstance(view, dict)
    if kind is not None and view.get("type") != kind:
        raise invalid_arguments(f"{call.method} takes a view of type {kind}")
    return view


def _exchange(call: Call) -> Trigger:
    trigger_id = call.args.text("trigger_id") or call.args.text("interactivity_pointer")
    trigger = call.state.triggers.get(trigger_id)
    if trigger is None:
        raise ApiError("invalid_trigger_id")
    if trigger.exchanged:
        raise ApiError("exchanged_trigger_id")
    if time.monotonic() - trigger.issued_at > call.state.config.trigger_ttl_s:
        raise ApiError("expired_trigger_id")
    trigger.exchanged = True
    return trigger


def open_(call: Call) -> JsonObject:
    state = call.state
    body = _view_arg(call, kind="modal")
    with state.lock:
        trigger = _exchange(call)
        view = new_view(state, body, user=trigger.user)
        state.modal_stacks[trigger.user] = [view.id]
    state.touch()
    return {"ok": True, "view": view_json(state, view)}


def push(call: Call) -> JsonObject:
    state = call.state
    body = _view_arg(call, kind="modal")
    with state.lock:
        trigger = _exchange(call)
        stack = state.modal_stacks.get(trigger.user, [])
        if not stack:
            raise ApiError("not_found")
        if len(stack) >= MAX_STACK:
            raise ApiError("push_limit_reached")
        view = new_view(state, body, user=trigger.user, root=stack[0], previous=stack[-1])
        stack.append(view.id)
    state.touch()
    return {"ok": True, "view": view_json(state, view)}


def update(call: Call) -> JsonObject:
    args, state = call.args, call.state
    body = _view_arg(call, kind=None)
    with state.lock:
        view_id, external_id = args.text("view_id"), args.text("external_id")
        if view_id:
            view = state.views.get(view_id)
        else:
            view = next(
                (v for v in state.views.values() if external_id and v.external_id == external_id),
                None,
            )
        if view is None or view.type.value != body.get("type"):
            raise ApiError("not_found")
        if args.has("hash") and args.text("hash") != view.hash:
            raise ApiError("hash_conflict")
        new_external = str(body.get("external_id", view.external_id))
        if external_id_taken(state, new_external, besides=view.id):
            raise ApiError("duplicate_external_id")
        view.external_id = new_external
        fill(state, view, body)
    state.touch()
    return {"ok": True, "view": view_json(state, view)}


def publish(call: Call) -> JsonObject:
    args, state = call.args, call.state
    user = args.required("user_id")
    body = _view_arg(call, kind="home")
    with state.lock:
        if user not in state.users or state.users[user].is_bot:
            raise invalid_arguments("user_id is not a user of this workspace")
        existing = state.views.get(state.home_views.get(user, ""))
        if existing is None:
            view = new_view(state, body, user=user)
            state.home_views[user] = view.id
        else:
            if args.has("hash") and args.text("hash") != existing.hash:
                raise ApiError("hash_conflict")
            fill(state, existing, body)
            view = existing
    state.touch()
    return {"ok": True, "view": view_json(state, view)}
