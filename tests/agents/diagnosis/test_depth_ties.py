"""Ties between services are broken by depth on the call graph — the deepest service whose own
state explains its callers' — never by name, and the ranking agrees with the confidences it
shows."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from agents.diagnosis.candidate import APP_AUTH, APP_CODE, Candidate
from agents.diagnosis.facts import Facts
from agents.diagnosis.handlers import load_handlers
from agents.diagnosis.observe import Observations
from agents.diagnosis.offline import _localise
from agents.model import Diagnosis, Scope
from tests.agents.diagnosis.conftest import Run
from tests.agents.diagnosis.world import T0, World, hotel, shop, stamp


def ranked_consistently(d: Diagnosis) -> None:
    confidences = [h.confidence for h in d.hypotheses]
    assert confidences == sorted(confidences, reverse=True), d.hypotheses


def _refused_along_the_chain(w: World, chain: list[str], refusal: str, db_line: str) -> None:
    """Each caller's error names its callee with the database's refusal, the way gRPC passes
    an error up; the database's own log says why."""
    for caller, callee in itertools.pairwise(chain):
        w.log(caller, f"error calling {callee}: rpc error: code = Unknown desc = {refusal}")
        w.sick(caller, errors=0.5 if callee != chain[-1] else 1.0)
    w.raw_log(chain[-1], f"{stamp(T0 + timedelta(seconds=1))} {db_line}")
    w.sick(chain[-1], errors=0.5)


def test_hotel_a_database_refusing_its_client_outranks_the_client_that_relays_it(
    run: Run,
) -> None:
    w = hotel()
    refusal = 'not authorized on geo-db to execute command { find: "geo", filter: {} }'
    # MongoDB's own line quotes the command, collection "geo" included: a mention of the
    # client's name, not a call to it.
    _refused_along_the_chain(
        w,
        ["frontend", "search", "geo", "mongodb-geo"],
        refusal,
        '{"t":{"$date":"2026-11-30T10:00:01.000Z"},"s":"E","c":"ACCESS","ctx":"conn12",'
        f'"msg":"Checking authorization failed: {refusal}"}}',
    )
    d = run(w, "frontend")
    assert (d.top.service, str(d.top.category)) == ("mongodb-geo", "application/authentication")
    assert [h.service for h in d.hypotheses[:3]] == ["mongodb-geo", "geo", "search"]
    ranked_consistently(d)


def test_shop_a_cache_refusing_its_client_outranks_the_client(run: Run) -> None:
    w = shop()
    refusal = "WRONGPASS invalid username-password pair or user is disabled"
    _refused_along_the_chain(
        w,
        ["frontend", "cart", "valkey-cart"],
        refusal,
        f"1:M 30 Nov 2026 10:00:01.000 # AUTH failed: {refusal} (client addr=10.244.1.7)",
    )
    d = run(w, "frontend")
    assert (d.top.service, str(d.top.category)) == ("valkey-cart", "application/authentication")
    assert d.hypotheses[1].service == "cart"
    ranked_consistently(d)


def _facts(edges: list[tuple[str, str, str]]) -> Facts:
    obs = Observations(scope=Scope(cluster="lab", namespace="ns"), now=T0, started_at=T0)
    for caller, callee, source in edges:
        obs.edges.add((caller, callee))
        obs.edge_sources[(caller, callee)] = source
    return Facts(obs, load_handlers().select([]))


def _candidate(service: str, confidence: float) -> Candidate:
    return Candidate(
        service=service, category=APP_AUTH, confidence=confidence, explanation="x", rule="r"
    )


@pytest.mark.parametrize("names", [("aaa", "zzz"), ("zzz", "aaa")])
def test_a_tie_goes_to_the_callee_whatever_the_names(names: tuple[str, str]) -> None:
    caller, callee = names
    facts = _facts([(caller, callee, "metrics"), (callee, caller, "logs")])
    ranked = _localise(facts, [_candidate(caller, 0.9), _candidate(callee, 0.9)])
    assert [c.service for c in ranked] == [callee, caller]
    assert ranked[0].confidence > ranked[1].confidence


def test_unrelated_services_about_as_likely_lower_the_top_and_stay_in_order() -> None:
    facts = _facts([("frontend", "cart", "metrics"), ("frontend", "ad", "metrics")])
    ranked = _localise(
        facts,
        [
            _candidate("cart", 0.9),
            _candidate("ad", 0.88),
            Candidate(
                service="frontend", category=APP_CODE, confidence=0.87, explanation="x", rule="r"
            ),
        ],
    )
    assert [c.service for c in ranked] == ["cart", "ad", "frontend"]
    assert [round(c.confidence, 2) for c in ranked] == [0.85, 0.85, 0.85]
