"""What `/stratus`, the App Home and the digests need of the running bot.

The bot core's `bot.services.Services` is the contract; these surfaces use a small part of it,
named here as Protocols (`SurfaceServices`) so that they read and type-check on their own:
the agents' `brain` for reads, `incidents` for every action (an undo runs in the scope's lane,
never in a listener's thread), `directory` for who a user is (their groups), `slack` for
modals. `CommandContext` unpacks them once into named parts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agents.detection.detector import Detector
from agents.detection.events import Detection
from agents.incident.approvals import Person
from agents.incident.machine import IncidentMachine
from agents.model import Scope
from agents.policy import Policy
from agents.ports import Clock, MetricsSource
from agents.severity import SeverityMeter
from agents.wiring import Brain
from bot.render.blocks import View
from storage import Store

logger = logging.getLogger(__name__)

#: Called with what `/stratus declare` detected.
DetectionHook = Callable[[Detection], None]


class Operations(Protocol):
    """The part of `bot.operations.IncidentOps` these surfaces use."""

    def after_detection(self, detection: Detection) -> None:
        """Announce what a detection opened and drive it (the hook of `/stratus declare`)."""
        ...

    def undo(
        self,
        *,
        transaction_id: str,
        user: str,
        channel: str | None,
        view_id: str | None,
        confirm_drift: bool = False,
    ) -> None:
        """Undo in the scope's lane; the result replaces the modal `view_id`."""
        ...


class PersonDirectory(Protocol):
    def person(self, user_id: str) -> Person: ...


class Modals(Protocol):
    def open_view(self, trigger_id: str, view: View) -> str:
        """Returns the view id."""
        ...

    def update_view(self, view_id: str, view: View) -> None: ...


class SurfaceServices(Protocol):
    """What these surfaces read of `bot.services.Services`."""

    @property
    def brain(self) -> Brain: ...

    @property
    def incidents(self) -> Operations: ...

    @property
    def directory(self) -> PersonDirectory: ...

    @property
    def slack(self) -> Modals: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandContext:
    brain: Brain
    ops: Operations
    people: PersonDirectory
    modals: Modals

    @classmethod
    def of(cls, services: SurfaceServices) -> CommandContext:
        return cls(
            brain=services.brain,
            ops=services.incidents,
            people=services.directory,
            modals=services.slack,
        )

    @property
    def store(self) -> Store:
        return self.brain.store

    @property
    def machine(self) -> IncidentMachine:
        return self.brain.machine

    @property
    def policy(self) -> Policy:
        return self.brain.policy

    @property
    def detector(self) -> Detector:
        return self.brain.detector

    @property
    def meter(self) -> SeverityMeter:
        return self.brain.meter

    @property
    def clock(self) -> Clock:
        return self.brain.machine.clock

    @property
    def metrics(self) -> MetricsSource | None:
        return self.brain.diagnoser.metrics

    @property
    def cluster(self) -> str:
        return self.brain.journal.cluster

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces Stratus covers: the configured ones, else the policy's."""
        return self.brain.namespaces or self.policy.covered_namespaces

    def scope(self, namespace: str) -> Scope:
        return Scope(cluster=self.cluster, namespace=namespace)
