"""What the listeners need of the bot's services (the part of `bot.services.Services` they
use), so that they can be read and tested on their own."""

from __future__ import annotations

from typing import Protocol

from bot.failures import FailureReporter
from bot.operations import IncidentOps
from bot.slack_io import SlackIO


class ListenerServices(Protocol):
    @property
    def incidents(self) -> IncidentOps: ...

    @property
    def slack(self) -> SlackIO: ...

    @property
    def failures(self) -> FailureReporter: ...
