from __future__ import annotations

from collections.abc import Callable

import pytest

from agents.diagnosis import Diagnoser
from agents.model import Alert, Diagnosis
from tests.agents.diagnosis.world import (
    FakeCluster,
    FakeJournal,
    FakeMetrics,
    FixedClock,
    World,
    alert,
    incident,
)

Run = Callable[..., Diagnosis]


@pytest.fixture
def run() -> Run:
    def diagnose(
        world: World,
        service: str | None,
        alertname: str = "HighErrorRate",
        *,
        metrics: bool = True,
        journal: bool = True,
        alerts: list[Alert] | None = None,
    ) -> Diagnosis:
        diagnoser = Diagnoser(
            cluster=FakeCluster(world),
            metrics=FakeMetrics(world) if metrics else None,
            journal=FakeJournal(world) if journal else None,
            clock=FixedClock(),
        )
        return diagnoser.diagnose(
            incident(world, service), alerts or [alert(world, alertname, service)]
        )

    return diagnose
