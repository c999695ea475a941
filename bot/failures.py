"""The one place failures end: logged with their traceback, told to the person concerned.

Bolt's global error handler (a listener that raised) and the worker lanes (a task that raised)
both hand their exception here. The person who clicked gets an ephemeral message mapped from
the exception (`bot.errors.user_message`, with the incident id) — never a stack trace.
"""

from __future__ import annotations

import logging

from bot.errors import SlackCallFailed, user_message
from bot.slack_io import SlackIO
from bot.workers import Origin

logger = logging.getLogger(__name__)


class FailureReporter:
    def __init__(self, slack: SlackIO | None = None) -> None:
        self._slack = slack

    def report(self, error: BaseException, origin: Origin) -> None:
        logger.error(
            "%s failed (incident=%s user=%s)",
            origin.what,
            origin.incident_id,
            origin.user,
            exc_info=error,
        )
        if self._slack is None or not origin.user:
            return
        try:
            self._slack.tell(
                origin.user, user_message(error, origin.incident_id), channel=origin.channel
            )
        except SlackCallFailed as e:
            logger.warning("could not tell %s about the failure: %s", origin.user, e.error)
