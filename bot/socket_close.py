"""Closing slack_sdk's built-in Socket Mode client without hanging.

`SocketModeClient.close()` sets the session's `terminated` flag and then joins the session
runner with no timeout. The runner is an interval loop that calls `_run_current_session`
every 0.1 s, and that method begins with `current_session_state.terminated = False` whenever
the socket is still open. If close's `True` lands just before the runner's `False`, the runner
spins in `run_until_completion` forever (its 0.2 s sleep while the socket is gone) and close
never returns: `runtime.stop()` hung for five minutes in CI this way.

So we stop the loops ourselves first: set every runner's event (no new iteration starts),
wake the reader and the message thread, and keep re-asserting `terminated` while we join with
a bounded wait. Only then is the client's own close called, when its joins return at once.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from typing import Any

from slack_sdk.socket_mode.builtin import SocketModeClient

logger = logging.getLogger(__name__)

#: How long the session's threads get to stop before they are left behind (they are daemons).
CLOSE_WAIT_S = 5.0


def close_socket_mode(client: SocketModeClient, wait_s: float = CLOSE_WAIT_S) -> bool:
    """Close the client (a Bolt `SocketModeHandler`'s close is only this); False when a thread
    did not stop within `wait_s` and was left running (the socket is closed either way)."""
    client.closed = True
    client.auto_reconnect_enabled = False
    runners = [
        getattr(client, name, None)
        for name in ("current_session_runner", "current_app_monitor", "message_processor")
    ]
    for runner in runners:
        if runner is not None:
            runner.event.set()
    session = client.current_session
    # The reader holds a lock for up to 3 s in recv(); shutting the socket down wakes it.
    with contextlib.suppress(OSError, AttributeError):
        session.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
    # The message thread waits up to 1 s on its queue; an empty message after `closed` wakes it.
    client.message_queue.put("")
    deadline = time.monotonic() + wait_s
    stopped = all(_join(client, runner, deadline) for runner in runners)
    if stopped:
        client.close()
        return True
    logger.warning(
        "socket mode: the client's threads did not stop within %.0f s; closing the socket and "
        "leaving them behind",
        wait_s,
    )
    client.disconnect()
    client.message_workers.shutdown(wait=False)
    return False


def _join(client: Any, runner: Any, deadline: float) -> bool:
    thread = getattr(runner, "thread", None)
    while thread is not None and thread.is_alive():
        if time.monotonic() >= deadline:
            return False
        # Re-asserted on every turn: the runner may have just set it back to False.
        client.current_session_state.terminated = True
        client.auto_reconnect_enabled = False
        thread.join(0.05)
    return True
