from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.journal import ChangeJournal
from lab.clock import LabClock
from storage import Store
from tests.agents.detection.fakes import T0, FakeCluster, migrated_store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = migrated_store(tmp_path)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def clock() -> LabClock:
    return LabClock(start=T0, stepped=True)


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster()


@pytest.fixture
def journal(store: Store, clock: LabClock) -> ChangeJournal:
    return ChangeJournal(store=store, clock=clock, cluster="lab", namespaces=["hotel"])
