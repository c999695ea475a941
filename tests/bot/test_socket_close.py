"""Closing Socket Mode never hangs: slack_sdk's runner sets the session's `terminated` flag
back to False at the start of each turn, so a close whose `True` lands just before it left the
runner spinning and `runtime.stop()` joined it forever (a five-minute CI timeout)."""

from __future__ import annotations

import threading
import time

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk import WebClient
from slack_sdk.socket_mode.builtin.connection import ConnectionState

from bot.socket_close import close_socket_mode
from lab.slack import SlackWorkspace
from tests.lab.slack.conftest import bolt_app, close_quickly


class _LosesTheFirstTrue(ConnectionState):
    """The race, made certain: the first `terminated = True` is overwritten, as the runner's
    own `terminated = False` does when it lands just after close's write."""

    def __init__(self) -> None:
        self._lost = False
        self._value = False

    @property  # type: ignore[override]
    def terminated(self) -> bool:
        return self._value

    @terminated.setter
    def terminated(self, value: bool) -> None:
        if value and not self._lost:
            self._lost = True
            return
        self._value = value


def _connected(ws: SlackWorkspace) -> SocketModeHandler:
    handler = SocketModeHandler(
        bolt_app(ws), ws.config.app_token, web_client=WebClient(base_url=ws.api_url)
    )
    handler.connect()  # type: ignore[no-untyped-call]
    ws.wait_until(lambda: ws.socket_connections)
    return handler


def _race(handler: SocketModeHandler) -> None:
    """Swap in the losing state for the runner's next turn: end the current turn and wait
    until the runner has started the next one with the new state."""
    client = handler.client
    old = client.current_session_state
    client.current_session_state = _LosesTheFirstTrue()
    old.terminated = True
    time.sleep(0.5)  # the runner's interval is 0.1 s
    assert client.current_session_runner.is_alive()


def _closes_within(close: object, seconds: float) -> bool:
    thread = threading.Thread(target=close, daemon=True)  # type: ignore[arg-type]
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


def test_a_lost_terminate_does_not_hang_the_close() -> None:
    with SlackWorkspace() as ws:
        handler = _connected(ws)
        _race(handler)
        started = time.monotonic()
        assert _closes_within(lambda: close_socket_mode(handler.client), 10)
        assert time.monotonic() - started < 5
        assert not handler.client.current_session_runner.is_alive()
        assert not handler.client.is_connected()


def test_the_library_close_hangs_on_the_same_race() -> None:
    """The control: without our close, slack_sdk's own close never returns."""
    with SlackWorkspace() as ws:
        handler = _connected(ws)
        _race(handler)
        close_quickly(handler.client)
        assert not _closes_within(handler.close, 3)
        # Let the stranded runner go, so the test leaves no thread behind.
        handler.client.current_session_state.terminated = True
        handler.client.current_session_runner.thread.join(5)
