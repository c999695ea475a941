"""The bot as in production on the stand-ins (see `tests/bot/commands/stand.py`), with the
App Home registered by `bot.app` through its surface seam."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.commands.stand import Stand, make_stand


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Stand]:
    with make_stand(tmp_path) as stand:
        yield stand
