"""What `/stratus` and the App Home need of the running bot (`bot.services.Services`):
the agents' `brain` for reads, `incidents` for every action (an undo runs in the scope's lane,
never in a listener's thread), `directory` for who a user is (their groups), `slack` for
modals. `CommandContext` unpacks them once into named parts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agents.detection.events import Detection
from agents.model import Scope
from agents.wiring import Brain

if TYPE_CHECKING:
    from bot.directory import Directory
    from bot.operations import IncidentOps
    from bot.services import Services
    from bot.slack_io import SlackIO

logger = logging.getLogger(__name__)

#: Called with what `/stratus declare` detected.
DetectionHook = Callable[[Detection], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandContext:
    brain: Brain
    ops: IncidentOps
    people: Directory
    modals: SlackIO

    @classmethod
    def of(cls, services: Services) -> CommandContext:
        return cls(
            brain=services.brain,
            ops=services.incidents,
            people=services.directory,
            modals=services.slack,
        )

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces Stratus covers: the configured ones, else the policy's."""
        return self.brain.namespaces or self.brain.policy.covered_namespaces

    def scope(self, namespace: str) -> Scope:
        return Scope(cluster=self.brain.cluster, namespace=namespace)
