"""Scenario fixtures: `make_lab(...)` starts the production bot on the stand-ins (see
`harness.py`) and stops everything at the end of the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.bot.scenario.harness import BotLab, bot_lab

MakeLab = Callable[..., BotLab]


@pytest.fixture
def make_lab(tmp_path: Path) -> Iterator[MakeLab]:
    with ExitStack() as stack:
        count = 0

        def make(**kwargs: Any) -> BotLab:
            nonlocal count
            count += 1
            where = tmp_path / f"lab{count}"
            where.mkdir()
            return stack.enter_context(bot_lab(where, **kwargs))

        yield make
