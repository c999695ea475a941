"""Fixtures: a running workspace, a real `WebClient`, and a real Bolt app connected to the
workspace in Socket Mode or served in HTTP mode on 127.0.0.1."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest
from slack_bolt import App
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_sdk import WebClient
from slack_sdk.socket_mode import SocketModeClient

from bot.socket_close import close_socket_mode
from lab.slack import SlackWorkspace, WorkspaceConfig


@pytest.fixture
def workspace() -> Iterator[SlackWorkspace]:
    with SlackWorkspace() as ws:
        yield ws


@pytest.fixture
def client(workspace: SlackWorkspace) -> WebClient:
    return WebClient(base_url=workspace.api_url, token=workspace.config.bot_token)


def bolt_app(ws: SlackWorkspace) -> App:
    """A real Bolt app pointed at the workspace (Bolt calls auth.test here)."""
    return App(
        client=WebClient(base_url=ws.api_url, token=ws.config.bot_token),
        signing_secret=ws.config.signing_secret,
        logger=logging.getLogger("tests.bolt"),
    )


@contextmanager
def socket_mode(app: App, ws: SlackWorkspace) -> Iterator[SocketModeHandler]:
    handler = SocketModeHandler(app, ws.config.app_token, web_client=WebClient(base_url=ws.api_url))
    handler.connect()  # type: ignore[no-untyped-call]
    ws.wait_until(lambda: ws.socket_connections)
    try:
        yield handler
    finally:
        close_socket_client(handler)


def close_socket_client(handler: SocketModeHandler) -> None:
    assert close_socket_mode(handler.client), "socket mode threads did not stop"


def close_quickly(client: SocketModeClient) -> None:
    """Prepare slack_sdk's built-in client to close without its built-in waits: its reader
    holds a lock for up to 3 s in recv() (shutting the socket down wakes it) and its message
    thread waits up to 1 s in queue.get() (an empty message after `closed` wakes it)."""
    session = client.current_session
    with contextlib.suppress(OSError, AttributeError):
        session.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
    client.closed = True
    client.message_queue.put("")


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = False  # server_close() joins the request threads


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def http_mode(app: App, ws: SlackWorkspace) -> Iterator[str]:
    """Serve the Bolt app at http://127.0.0.1:PORT/slack/events and point the workspace at it."""
    server = make_server(
        "127.0.0.1",
        0,
        SlackRequestHandler(app),
        server_class=_ThreadingWSGIServer,
        handler_class=_QuietHandler,
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/slack/events"
    ws.use_http(url)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def fast_workspace() -> Iterator[SlackWorkspace]:
    """A workspace with short ack and retry timings, for tests of timeouts and retries."""
    config = WorkspaceConfig(
        ack_timeout_s=0.5, event_retry_delays_s=(0.0, 0.05, 0.05), trigger_ttl_s=0.2
    )
    with SlackWorkspace(config) as ws:
        yield ws
