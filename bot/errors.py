"""The bot's error tree, and what a person is told when something fails.

`user_message` maps an exception to one sentence with the incident id — never a traceback;
the traceback goes to the log (`bot.failures.FailureReporter`).
"""

from __future__ import annotations

from agents.errors import (
    ClusterError,
    Conflict,
    Forbidden,
    LockLost,
    ModelUnavailable,
    NotFound,
    TransientError,
)
from agents.tnr import LockBusy
from storage import NotFound as RowNotFound
from storage import StorageError, Unavailable


class BotError(Exception):
    """Root of the errors the bot raises on purpose."""


#: Slack's error codes for a call that may succeed as it is a moment later (its documented
#: server-side errors, and a rate limit that outlasted the client's own retries).
TRANSIENT_SLACK_ERRORS = frozenset(
    {"service_unavailable", "internal_error", "fatal_error", "request_timeout", "ratelimited"}
)


class SlackCallFailed(BotError):
    """A Slack Web API call failed after its retries. `error` is Slack's error code
    (`not_in_channel`, `ratelimited`, ...) or `connection_error`."""

    def __init__(self, method: str, error: str) -> None:
        super().__init__(f"Slack {method} failed: {error}")
        self.method = method
        self.error = error

    @property
    def transient(self) -> bool:
        """Worth trying again as it is (for a call that is safe to repeat)."""
        return self.error in TRANSIENT_SLACK_ERRORS or self.error.startswith("connection_error")


class RunLater(BotError):
    """A task on a `Lanes` lane is not ready yet: its worker goes back to the pool and the
    task runs again, first in its lane, in `delay_s` seconds. The task must be safe to run
    again from the start (it raised before doing what it was for)."""

    def __init__(self, why: str, delay_s: float) -> None:
        super().__init__(f"{why}; again in {delay_s:.3f}s")
        self.delay_s = delay_s


class SlotBusy(RunLater):
    """A Slack call asked not to wait (`wait=False`) and its pacing slot (`key`: a channel,
    or a channel and a message) is not free for `delay_s` seconds. Nothing was sent."""

    def __init__(self, key: str, delay_s: float) -> None:
        super().__init__(f"Slack slot of {key} busy", delay_s)
        self.key = key


class StartupError(BotError):
    """The bot cannot start (missing token, unreachable database...). One line for the CLI."""


class ChartFailed(BotError):
    """A chart was not drawn: the chart worker refused the input, died, or did not answer in
    time. The message it belongs to goes out without it."""


def user_message(error: BaseException, incident_id: str | None = None) -> str:
    """One sentence for the person whose click or command failed."""
    about = f" (incident {incident_id})" if incident_id else ""
    if isinstance(error, LockBusy):
        text = "Another change is running in this namespace; try again when it has finished"
    elif isinstance(error, LockLost):
        text = "The writer lock was lost mid-way; recovery is finishing the transaction"
    elif isinstance(error, Unavailable):
        text = "The database is unavailable right now; try again in a minute"
    elif isinstance(error, RowNotFound | NotFound):
        text = "That no longer exists (it may have been cleaned up)"
    elif isinstance(error, StorageError):
        text = "Stratus could not read or write its database"
    elif isinstance(error, Forbidden):
        text = "The cluster refused the request (RBAC)"
    elif isinstance(error, Conflict):
        text = "The object changed in the cluster meanwhile; look again and retry"
    elif isinstance(error, TransientError):
        text = "The cluster did not answer in time; try again shortly"
    elif isinstance(error, ClusterError):
        text = "The cluster could not be read or written"
    elif isinstance(error, ModelUnavailable):
        text = "The language model is unavailable; the offline reasoner will be used"
    elif isinstance(error, SlackCallFailed):
        text = f"Slack refused a call ({error.error})"
    else:
        text = "Something went wrong; the details are in Stratus's log"
    return f":warning: {text}{about}."
