"""Incident channel names: `inc-<date>-<slug>` from the incident id, lowercase, within
Slack's 80 characters and its character set, distinct when a name is taken."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from bot.channels import NAME_MAX, channel_name


def test_the_name_comes_from_the_incident_id() -> None:
    assert channel_name("INC-20260105-geo-3f2a") == "inc-20260105-geo-3f2a"
    assert channel_name("INC-20260105-geo-3f2a", 1) == "inc-20260105-geo-3f2a-2"


@given(st.text(max_size=300), st.integers(0, 9))
def test_names_are_always_valid_slack_channel_names(incident_id: str, attempt: int) -> None:
    name = channel_name(incident_id, attempt)
    assert re.fullmatch(r"[a-z0-9_-]+", name) and len(name) <= NAME_MAX
    assert name.startswith("inc-")
    assert name != channel_name(incident_id, attempt + 1)
