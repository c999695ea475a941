"""`POST /api/<method>`: parse, authenticate, rate-limit, dispatch, record.

Slack reads arguments from the query string and a form or JSON body, and the token from the
`Authorization: Bearer` header or a `token` argument. Every answer is JSON with `ok`; the
token's scopes come back in the `x-oauth-scopes` header (which `stratus doctor` reads), the
scopes the method accepts in `x-accepted-oauth-scopes`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from agents.model import JsonObject
from lab.slack.api import chat, conversations, directory, files, pins, views
from lab.slack.api.context import Args, Call
from lab.slack.config import TokenKind
from lab.slack.errors import ApiError
from lab.slack.limits import ApiCall, CallLog, RateLimiter
from lab.slack.records import OutgoingEvent
from lab.slack.store import WorkspaceState

logger = logging.getLogger(__name__)

Handler = Callable[[Call], JsonObject]
_PEOPLE = frozenset((TokenKind.BOT, TokenKind.USER))


@dataclass(frozen=True, slots=True, kw_only=True)
class Method:
    handler: Handler
    tokens: frozenset[TokenKind] = _PEOPLE


METHODS: dict[str, Method] = {
    "auth.test": Method(handler=directory.auth_test),
    "apps.connections.open": Method(
        handler=directory.connections_open, tokens=frozenset((TokenKind.APP,))
    ),
    "chat.postMessage": Method(handler=chat.post_message),
    "chat.postEphemeral": Method(handler=chat.post_ephemeral),
    "chat.update": Method(handler=chat.update),
    "chat.delete": Method(handler=chat.delete),
    "chat.getPermalink": Method(handler=chat.get_permalink),
    "conversations.archive": Method(handler=conversations.archive),
    "conversations.create": Method(handler=conversations.create),
    "conversations.history": Method(handler=conversations.history),
    "conversations.info": Method(handler=conversations.info),
    "conversations.invite": Method(handler=conversations.invite),
    "conversations.join": Method(handler=conversations.join),
    "conversations.list": Method(handler=conversations.list_),
    "conversations.members": Method(handler=conversations.members),
    "conversations.open": Method(handler=conversations.open_),
    "conversations.rename": Method(handler=conversations.rename),
    "conversations.replies": Method(handler=conversations.replies),
    "conversations.setTopic": Method(handler=conversations.set_topic),
    "files.completeUploadExternal": Method(handler=files.complete_upload),
    "files.getUploadURLExternal": Method(handler=files.get_upload_url),
    "files.info": Method(handler=files.info),
    "pins.add": Method(handler=pins.add),
    "pins.list": Method(handler=pins.list_),
    "pins.remove": Method(handler=pins.remove),
    "reactions.add": Method(handler=pins.react),
    "team.info": Method(handler=directory.team_info),
    "usergroups.list": Method(handler=directory.usergroups_list),
    "usergroups.users.list": Method(handler=directory.usergroups_users_list),
    "users.info": Method(handler=directory.users_info),
    "users.list": Method(handler=directory.users_list),
    "views.open": Method(handler=views.open_),
    "views.publish": Method(handler=views.publish),
    "views.push": Method(handler=views.push),
    "views.update": Method(handler=views.update),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    status: int
    body: JsonObject
    headers: dict[str, str]
    events: tuple[OutgoingEvent, ...] = ()


class WebApi:
    def __init__(
        self,
        state: WorkspaceState,
        *,
        limiter: RateLimiter,
        calls: CallLog,
        on_events: Callable[[list[OutgoingEvent]], None],
    ) -> None:
        self.state = state
        self.limiter = limiter
        self.calls = calls
        self.on_events = on_events

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        try:
            values = await _read_args(request)
        except ApiError as e:
            return web.json_response(e.body(), status=e.status)
        header = request.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""
        answer = self.call(method, values, token=token or str(values.get("token", "")))
        if answer.events:
            self.on_events(list(answer.events))
        return web.json_response(answer.body, status=answer.status, headers=answer.headers)

    def call(self, method: str, values: dict[str, Any], *, token: str) -> Answer:
        """Answer one call (in the server's loop; quick and non-blocking)."""
        args = Args(values)
        grant = self.state.grants.get(token)
        answer = self._answer(method, args, token)
        self.calls.add(
            ApiCall(
                method=method,
                args=args.redacted(),
                token_kind=grant.kind.value if grant is not None else "",
                at=self.state.clock(),
                status=answer.status,
                ok=bool(answer.body.get("ok")),
                error=str(answer.body.get("error", "")),
            )
        )
        return answer

    def _answer(self, method: str, args: Args, token: str) -> Answer:
        spec = METHODS.get(method)
        if spec is None:
            return Answer(status=200, body=ApiError("unknown_method").body(), headers={})
        if not token:
            return Answer(status=200, body=ApiError("not_authed").body(), headers={})
        grant = self.state.grants.get(token)
        if grant is None:
            return Answer(status=200, body=ApiError("invalid_auth").body(), headers={})
        headers = {"x-oauth-scopes": ",".join(grant.scopes)}
        if grant.kind not in spec.tokens:
            return Answer(
                status=200, body=ApiError("not_allowed_token_type").body(), headers=headers
            )
        retry_after = self.limiter.check(method, args.text("channel") or None)
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
            return Answer(status=429, body=ApiError("ratelimited").body(), headers=headers)
        call = Call(method=method, args=args, grant=grant, state=self.state)
        try:
            with self.state.lock:
                body = spec.handler(call)
        except ApiError as e:
            body = e.body()
        headers["x-accepted-oauth-scopes"] = ",".join(call.accepted_scopes)
        events = tuple(call.events) if body.get("ok") else ()
        return Answer(status=200, body=body, headers=headers, events=events)


async def _read_args(request: web.Request) -> dict[str, Any]:
    values: dict[str, Any] = dict(request.query)
    if request.method != "POST" or not request.can_read_body:
        return values
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except json.JSONDecodeError:
            raise ApiError("invalid_json") from None
        if not isinstance(body, dict):
            raise ApiError("invalid_json")
        values.update(body)
    elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        values.update({k: v for k, v in form.items() if isinstance(v, str)})
    else:
        raise ApiError("invalid_post_type")
    return values
