"""`SlackWorkspace`: the local Slack, as tests and `stratus demo` use it.

    with SlackWorkspace(config) as ws:          # serves on 127.0.0.1, a free port
        client = WebClient(base_url=ws.api_url, token=ws.config.bot_token)
        ...                                     # the bot connects (Socket Mode) or is POSTed to
        ws.slash_command("alice", "/stratus", "status hotel")
        message = ws.wait_for_message("incidents", lambda m: "hotel" in m["text"])
        ws.click("alice", "incidents", message["ts"], "approve")

Everything returned is a JSON copy in Slack's shapes. Users and channels may be named by id
or by name. Methods that act as a user wait until the app has acknowledged (or the ack
timeout passed) and return the `Delivery`; what the app does *after* its ack happens
later, so wait for its effect with `wait_until`/`wait_for_message`.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from agents.model import JsonObject
from lab.slack.api.endpoint import WebApi
from lab.slack.config import TokenKind, TokenSpec, WorkspaceConfig
from lab.slack.delivery.dispatcher import Dispatcher
from lab.slack.delivery.http_mode import HttpSender
from lab.slack.delivery.outcome import Delivery, EnvelopeKind
from lab.slack.delivery.socket_mode import SocketHub
from lab.slack.elements import UserInput, iter_elements
from lab.slack.interactions import Interactions
from lab.slack.limits import ApiCall, CallLog, RateLimiter
from lab.slack.records import Channel, TokenGrant
from lab.slack.server import WorkspaceServer
from lab.slack.store import WorkspaceState
from lab.slack.wire import channel_json, file_json, message_json, view_json

T = TypeVar("T")


class SlackWorkspace:
    def __init__(
        self,
        config: WorkspaceConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config or WorkspaceConfig()
        self.state = WorkspaceState(self.config, clock=clock)
        self._limiter = RateLimiter()
        self._calls = CallLog()
        self._hub = SocketHub(self.state)
        self._sender = HttpSender(self.state)
        self._dispatcher = Dispatcher(self.state, self._hub, self._sender)
        self._api = WebApi(
            self.state, limiter=self._limiter, calls=self._calls, on_events=self._dispatcher.emit
        )
        self._act = Interactions(self.state, self._dispatcher)
        self._server = WorkspaceServer(
            self.state,
            api=self._api,
            hub=self._hub,
            dispatcher=self._dispatcher,
            interactions=self._act,
        )
        self.url = ""
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> str:
        """Serve in a background thread; returns the base URL ("http://127.0.0.1:PORT")."""
        if self._stopped:
            raise RuntimeError("a stopped SlackWorkspace cannot be restarted; make a new one")
        if self.url:
            return self.url
        port = self._server.start(self.config.host, self.config.port)
        self.url = f"http://{self.config.host}:{port}"
        self.state.base_url = self.url
        return self.url

    def stop(self) -> None:
        """Close Socket Mode connections and the page's sockets, stop serving, join the thread."""
        self._server.stop()
        self._stopped = True

    def __enter__(self) -> SlackWorkspace:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        """The Web API base URL for `WebClient(base_url=...)` (with its trailing slash)."""
        return f"{self.url}/api/"

    def _run(self, coroutine: Any) -> Any:
        return self._server.run(coroutine, timeout=self._dispatcher.ack_timeout_s * 2 + 10)

    # ------------------------------------------------------------------ reading state

    def _channel(self, ref: str) -> Channel:
        channel = self.state.find_channel(ref, allow_names=True)
        if channel is None:
            raise KeyError(f"no channel {ref!r}")
        return channel

    def _user_id(self, ref: str) -> str:
        return self._act.user(ref).id

    def channel(self, ref: str) -> JsonObject:
        """A channel (by id or name) as `conversations.info` shows it to the bot."""
        with self.state.lock:
            return channel_json(self.state, self._channel(ref), viewer=self.config.bot_user_id)

    def channel_by_name(self, name: str) -> JsonObject | None:
        with self.state.lock:
            channel = self.state.channel_by_name(name)
            if channel is None:
                return None
            return channel_json(self.state, channel, viewer=self.config.bot_user_id)

    def messages(self, channel: str, thread_ts: str | None = None) -> list[JsonObject]:
        """Top-level messages of a channel, oldest first; with `thread_ts`, that thread
        (parent first). Ephemeral messages are not included (see `ephemerals`)."""
        state = self.state
        with state.lock:
            found = self._channel(channel)
            stored = state.messages[found.id]
            if thread_ts is None:
                chosen = [
                    m for m in stored.values() if not m.is_reply or m.subtype == "thread_broadcast"
                ]
            else:
                parent = stored.get(thread_ts)
                if parent is None:
                    return []
                chosen = [parent, *(stored[ts] for ts in parent.reply_ts)]
            return [message_json(state, m) for m in chosen]

    def message(self, channel: str, ts: str) -> JsonObject | None:
        with self.state.lock:
            found = self.state.message(self._channel(channel).id, ts)
            return message_json(self.state, found) if found is not None else None

    def ephemerals(self, channel: str, user: str | None = None) -> list[JsonObject]:
        state = self.state
        with state.lock:
            found = self._channel(channel)
            user_id = self._user_id(user) if user is not None else None
            out = []
            for message in state.ephemerals[found.id].values():
                if user_id is None or message.ephemeral_to == user_id:
                    body = message_json(state, message)
                    body["ephemeral_to"] = message.ephemeral_to
                    out.append(body)
            return out

    def pins(self, channel: str) -> list[JsonObject]:
        state = self.state
        with state.lock:
            found = self._channel(channel)
            return [message_json(state, state.messages[found.id][p.ts]) for p in found.pins]

    def files(self) -> list[JsonObject]:
        with self.state.lock:
            return [file_json(self.state, f) for f in self.state.files.values() if f.completed]

    def file_bytes(self, file_id: str) -> bytes:
        with self.state.lock:
            data = self.state.files[file_id].data
        if data is None:
            raise KeyError(f"file {file_id} has no uploaded bytes")
        return data

    def views(self, user: str) -> list[JsonObject]:
        """The user's open modals, root first (empty when none is open)."""
        state = self.state
        with state.lock:
            stack = state.modal_stacks.get(self._user_id(user), [])
            return [self._view(state.views[v].id) for v in stack]

    def _view(self, view_id: str) -> JsonObject:
        view = self.state.views[view_id]
        body = view_json(self.state, view)
        body["errors"] = dict(view.errors)
        return body

    def view(self, view_id: str) -> JsonObject | None:
        with self.state.lock:
            return self._view(view_id) if view_id in self.state.views else None

    def home_view(self, user: str) -> JsonObject | None:
        with self.state.lock:
            view_id = self.state.home_views.get(self._user_id(user))
            return self._view(view_id) if view_id else None

    def calls(self, method: str | None = None) -> list[ApiCall]:
        """Every Web API call so far (optionally of one method), oldest first."""
        return self._calls.list(method)

    def deliveries(self, kind: EnvelopeKind | str | None = None) -> list[Delivery]:
        """Every delivery attempt to the app, oldest first, with ack latencies."""
        return self._dispatcher.deliveries(EnvelopeKind(kind) if kind is not None else None)

    def notices(self, user: str) -> list[str]:
        """What Slack's client told the user outside messages (an app that did not answer)."""
        with self.state.lock:
            return list(self.state.notices.get(self._user_id(user), []))

    @property
    def socket_connections(self) -> int:
        """Socket Mode connections open now (not counting ones told to disconnect)."""
        return self._hub.connected

    @property
    def socket_connections_opened(self) -> int:
        """Socket Mode connections opened since start (reconnects count)."""
        return self._hub.connections_opened

    def wait_until(self, predicate: Callable[[], T | None], timeout: float = 30.0) -> T:
        """Re-evaluate `predicate` whenever the workspace changes until it is truthy. The default
        wait is long because it only runs out on failure: a bot posting a diagnosis with its
        chart (matplotlib's first import included) took over 5 s on a loaded 2-core CI machine."""
        result = self.state.wait_until(predicate, timeout)
        if not result:
            raise TimeoutError(f"workspace condition not met within {timeout} s")
        return result

    def wait_for_message(
        self,
        channel: str,
        predicate: Callable[[JsonObject], bool] | None = None,
        *,
        thread_ts: str | None = None,
        timeout: float = 30.0,
    ) -> JsonObject:
        """The newest message (or thread reply) matching `predicate`, waiting for it."""

        def newest() -> JsonObject | None:
            for message in reversed(self.messages(channel, thread_ts)):
                if predicate is None or predicate(message):
                    return message
            return None

        return self.wait_until(newest, timeout)

    # ------------------------------------------------------------------ test hooks

    def inject_rate_limit(self, method: str, count: int = 1, retry_after: int = 1) -> None:
        """Answer the next `count` calls of `method` with 429 and `Retry-After`."""
        self._limiter.inject(method, count=count, retry_after=retry_after)

    def set_posting_limit(self, per_second: float | None = 1.0, *, burst: int = 1) -> None:
        """Enforce Slack's per-channel posting limit (None turns it off)."""
        self._limiter.set_posting_limit(per_second, burst=burst)

    def set_scopes(self, token: str, scopes: tuple[str, ...]) -> None:
        with self.state.lock:
            grant = self.state.grants[token]
            self.state.grants[token] = TokenGrant(
                token=token, kind=grant.kind, scopes=tuple(scopes), user_id=grant.user_id
            )

    def add_token(self, spec: TokenSpec) -> None:
        user_id = spec.user_id if spec.kind is TokenKind.USER else self.config.bot_user_id
        with self.state.lock:
            self.state.grants[spec.token] = TokenGrant(
                token=spec.token, kind=spec.kind, scopes=spec.scopes, user_id=user_id
            )

    def use_http(self, request_url: str) -> None:
        """Deliver by signed POSTs to the app's Request URL from now on."""
        self._dispatcher.request_url = request_url
        self.state.touch()

    def use_socket_mode(self) -> None:
        self._dispatcher.request_url = None
        self.state.touch()

    def sign_requests(self, *, secret: str | None = None, clock_skew_s: float = 0.0) -> None:
        """Sign HTTP-mode requests with another secret and/or a skewed timestamp (to prove
        the app refuses them); call with no arguments to sign correctly again."""
        self._sender.sign_with(secret=secret, clock_skew_s=clock_skew_s)

    def set_ack_timeout(self, seconds: float) -> None:
        self._dispatcher.ack_timeout_s = seconds

    def set_event_retry_delays(self, delays_s: tuple[float, ...]) -> None:
        self._dispatcher.retry_delays_s = delays_s

    def verify_request_url(self, url: str | None = None) -> bool:
        """Slack's `url_verification` handshake against the Request URL."""
        target = url or self._dispatcher.request_url
        if not target:
            raise ValueError("no Request URL configured")
        challenge = secrets.token_urlsafe(24)
        payload = {
            "token": self.config.verification_token,
            "challenge": challenge,
            "type": "url_verification",
        }
        ack, _status = self._run(
            self._sender.post(
                target, kind=None, payload=payload, timeout=self._dispatcher.ack_timeout_s
            )
        )
        answer = ack.payload or {}
        return bool(ack.acked and challenge in (answer.get("challenge"), answer.get("text")))

    def disconnect_socket(self, reason: str = "refresh_requested") -> int:
        """Send Slack's `disconnect` to every Socket Mode connection (they reconnect)."""
        told: int = self._run(self._hub.disconnect(reason))
        return told

    # ------------------------------------------------------------------ acting as a user

    def slash_command(
        self, user: str, command: str, text: str = "", channel: str | None = None
    ) -> Delivery:
        delivery: Delivery = self._run(self._act.slash_command(user, command, text, channel))
        return delivery

    def click(
        self,
        user: str,
        channel: str,
        message_ts: str,
        action_id: str,
        value: UserInput = None,
        *,
        block_id: str | None = None,
    ) -> Delivery:
        """Click a button (`value` picks among buttons sharing the action_id) or choose an
        option (`value` is the option's value) in a message or an ephemeral message."""
        delivery: Delivery = self._run(
            self._act.click(user, channel, message_ts, action_id, value, block_id=block_id)
        )
        return delivery

    def click_in_view(
        self,
        user: str,
        view_id: str,
        action_id: str,
        value: UserInput = None,
        *,
        inputs: Mapping[str, Any] | None = None,
    ) -> Delivery:
        with self.state.lock:
            normalised = self._inputs(view_id, inputs or {})
        delivery: Delivery = self._run(
            self._act.click_in_view(user, view_id, action_id, value, normalised)
        )
        return delivery

    def submit_view(self, user: str, view_id: str, values: Mapping[str, Any]) -> Delivery:
        """Submit a modal. `values` maps block_id → {action_id: input}, or simply
        action_id → input; an input is the text typed, the option value(s) chosen, or the
        user/channel id picked. Inputs not given keep their initial values."""
        with self.state.lock:
            normalised = self._inputs(view_id, values)
        delivery: Delivery = self._run(self._act.submit_view(user, view_id, normalised))
        return delivery

    def _inputs(self, view_id: str, values: Mapping[str, Any]) -> dict[str, dict[str, UserInput]]:
        view = self.state.views.get(view_id)
        if view is None:
            raise KeyError(f"no view {view_id}")
        by_action = {e.get("action_id"): b for b, e in iter_elements(view.blocks)}
        block_ids = set(by_action.values())
        out: dict[str, dict[str, UserInput]] = {}
        for key, value in values.items():
            if key in block_ids and isinstance(value, Mapping):
                out.setdefault(key, {}).update(value)
            elif key in by_action:
                out.setdefault(by_action[key], {})[key] = value
            else:
                raise KeyError(f"view {view_id} has no block or action {key!r}")
        return out

    def close_view(self, user: str, view_id: str) -> Delivery | None:
        delivery: Delivery | None = self._run(self._act.close_view(user, view_id))
        return delivery

    def open_app_home(self, user: str) -> Delivery | None:
        """The user opens the app's Home tab (`app_home_opened`)."""
        delivery: Delivery | None = self._run(self._act.open_app_home(user))
        return delivery

    def post_as_user(self, user: str, channel: str, text: str, thread_ts: str | None = None) -> str:
        """The user writes a message (the app gets `message`, and `app_mention` if the text
        mentions `<@bot>`); returns its ts."""
        ts: str = self._run(self._act.post_as_user(user, channel, text, thread_ts))
        return ts

    def join_channel(self, user: str, channel: str) -> None:
        self._run(self._act.join_channel(user, channel))
