"""`parse_command`: every subcommand, its arguments, and the usage message for each mistake."""

from __future__ import annotations

import pytest

from bot.commands.parse import (
    TITLE_MAX,
    USAGE,
    Declare,
    Diagnose,
    Digest,
    Help,
    Incidents,
    ShowIncident,
    ShowPolicy,
    Status,
    Undo,
    Usage,
    Verb,
    parse_command,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", Help()),
        ("   ", Help()),
        ("help", Help()),
        ("HELP", Help()),
        ("status", Status()),
        ("status hotel-reservation", Status(namespace="hotel-reservation")),
        ("  Status   online-shop ", Status(namespace="online-shop")),
        ("incidents", Incidents()),
        ("incidents --cluster prod", Incidents(cluster="prod")),
        ("incidents --cluster=gke_p_z_prod", Incidents(cluster="gke_p_z_prod")),
        ("incidents cluster=prod", Incidents(cluster="prod")),
        ("status prod/payments", Status(namespace="payments", cluster="prod")),
        ("incident INC-20260105-geo-3f2a", ShowIncident(incident_id="INC-20260105-geo-3f2a")),
        ("incident inc-20260105-geo-3f2a", ShowIncident(incident_id="INC-20260105-geo-3f2a")),
        ("incident #INC-1", ShowIncident(incident_id="INC-1")),
        ("diagnose hotel-reservation", Diagnose(namespace="hotel-reservation")),
        ("diagnose hotel-reservation/geo", Diagnose(namespace="hotel-reservation", service="geo")),
        ("undo tx-0123456789ab", Undo(transaction_id="tx-0123456789ab")),
        ("digest", Digest()),
        ("policy", ShowPolicy()),
        ("policy all", ShowPolicy(all=True)),
        ("policy ALL", ShowPolicy(all=True)),
        ("policy hotel-reservation", ShowPolicy(namespace="hotel-reservation")),
        ("declare checkout is slow", Declare(title="checkout is slow")),
        (
            "declare checkout is slow namespace=online-shop",
            Declare(title="checkout is slow", namespace="online-shop"),
        ),
        (
            "declare ns=online-shop   payments   fail ",
            Declare(title="payments fail", namespace="online-shop"),
        ),
        ("declare <script> & stuff", Declare(title="<script> & stuff")),
    ],
)
def test_commands(text: str, expected: object) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize(
    ("text", "verb", "says"),
    [
        ("frobnicate", None, "Unknown command `frobnicate`"),
        ("help me", Verb.HELP, "no more arguments"),
        ("incidents all", Verb.INCIDENTS, "does not take `all`"),
        ("incidents --cluster", Verb.INCIDENTS, "needs a cluster name"),
        ("incidents --cluster prod west", Verb.INCIDENTS, "no more arguments"),
        ("incidents --cluster <@U1>", Verb.INCIDENTS, "not a cluster name"),
        ("status prod/Pay_ments", Verb.STATUS, "not a namespace name"),
        ("status -x/payments", Verb.STATUS, "not a cluster name"),
        ("status /payments", Verb.STATUS, "not a cluster name"),
        ("digest now", Verb.DIGEST, "no more arguments"),
        ("status a b", Verb.STATUS, "at most one namespace"),
        ("status Hotel_Reservation", Verb.STATUS, "not a namespace name"),
        ("incident", Verb.INCIDENT, "exactly one incident id"),
        ("incident a b", Verb.INCIDENT, "exactly one incident id"),
        ("incident <@U123>", Verb.INCIDENT, "not a valid incident id"),
        ("undo", Verb.UNDO, "exactly one transaction id"),
        ("undo tx;rm", Verb.UNDO, "not a valid transaction id"),
        ("diagnose", Verb.DIAGNOSE, "needs one"),
        ("diagnose a b", Verb.DIAGNOSE, "needs one"),
        ("diagnose -bad-", Verb.DIAGNOSE, "not a namespace name"),
        ("diagnose hotel/Geo_1", Verb.DIAGNOSE, "not a service name"),
        ("policy a b", Verb.POLICY, "at most one namespace"),
        ("policy UPPER", Verb.POLICY, "not a namespace name"),
        ("declare", Verb.DECLARE, "needs a title"),
        ("declare namespace=hotel", Verb.DECLARE, "needs a title"),
        ("declare x namespace=A_B", Verb.DECLARE, "not a namespace name"),
        ("declare x namespace=a ns=b", Verb.DECLARE, "at most once"),
        ("declare " + "x" * (TITLE_MAX + 1), Verb.DECLARE, "keep it under"),
    ],
)
def test_mistakes_name_the_problem_and_the_usage(text: str, verb: Verb | None, says: str) -> None:
    result = parse_command(text)
    assert isinstance(result, Usage)
    assert says in result.problem
    assert result.verb is verb


def test_every_verb_has_a_usage_line_that_starts_with_its_name() -> None:
    assert set(USAGE) == set(Verb)
    for verb, line in USAGE.items():
        assert line.startswith(f"`/stratus {verb}")
