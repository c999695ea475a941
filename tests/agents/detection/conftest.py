from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.severity import SeverityMeter
from lab.clock import LabClock
from storage import Store
from tests.agents.detection.fakes import T0, FakeCluster, FakeMetrics, migrated_store


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
def metrics() -> FakeMetrics:
    return FakeMetrics()


@pytest.fixture
def meter(cluster: FakeCluster, metrics: FakeMetrics) -> SeverityMeter:
    return SeverityMeter(reader=cluster, metrics=metrics)
