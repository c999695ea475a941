"""Incident channel names: `inc-<date>-<slug>` from the incident id, lowercase, within
Slack's 80 characters and its character set, distinct when a name is taken."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from bot.channels import NAME_MAX, channel_name, root_cause_name


def test_the_name_comes_from_the_incident_id() -> None:
    assert channel_name("INC-20260105-geo-3f2a") == "inc-20260105-geo-3f2a"
    assert channel_name("INC-20260105-geo-3f2a", 1) == "inc-20260105-geo-3f2a-2"


@given(st.text(max_size=300), st.integers(0, 9), st.text(max_size=80))
def test_names_are_always_valid_slack_channel_names(
    incident_id: str, attempt: int, cluster: str
) -> None:
    name = channel_name(incident_id, attempt, cluster=cluster)
    assert re.fullmatch(r"[a-z0-9_-]+", name) and len(name) <= NAME_MAX
    assert name.startswith("inc-")
    assert name != channel_name(incident_id, attempt + 1, cluster=cluster)


def test_a_named_cluster_is_in_the_name() -> None:
    """One workspace, several clusters' deployments: the channel list says which is which.
    A deployment that never named its cluster (`default`) keeps the short name."""
    assert channel_name("INC-20260105-geo-3f2a", cluster="prod-eu") == (
        "inc-20260105-prod-eu-geo-3f2a"
    )
    assert channel_name("INC-20260105-geo-3f2a", 1, cluster="Prod EU") == (
        "inc-20260105-prod-eu-geo-3f2a-2"
    )
    assert channel_name("INC-20260105-geo-3f2a", cluster="default") == "inc-20260105-geo-3f2a"
    assert channel_name("INC-20260105-geo-3f2a", cluster="--") == "inc-20260105-geo-3f2a"
    assert channel_name("odd-id", cluster="prod") == "inc-prod-odd-id"
    assert root_cause_name("INC-20260105-frontend-3f2a", "geo", cluster="prod") == (
        "inc-20260105-prod-geo-3f2a"
    )
    assert root_cause_name("odd-id", "geo", cluster="prod") == "inc-prod-odd-id"


def test_the_name_follows_the_diagnosed_root_cause() -> None:
    assert root_cause_name("INC-20260105-frontend-3f2a", "geo") == "inc-20260105-geo-3f2a"
    assert root_cause_name("INC-20260105-frontend-3f2a", "geo", 1) == "inc-20260105-geo-3f2a-2"
    assert root_cause_name("INC-20260105-geo-3f2a", "geo") == channel_name("INC-20260105-geo-3f2a")
    assert root_cause_name("INC-20260105-a-b-3f2a09", "Mongo DB_geo") == (
        "inc-20260105-mongo-db_geo-3f2a09"
    )
    assert root_cause_name("odd-id", "geo") == channel_name("odd-id")
