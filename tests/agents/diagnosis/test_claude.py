"""The Claude reasoner through the real SDK against a local stand-in of the Messages API:
scripted turns, every request recorded, no test can reach a real model."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agents.adapters.anthropic_model import DEFAULT_MODEL, AnthropicModel
from agents.diagnosis import ClaudeSettings, Diagnoser, suspects_of
from agents.model import Diagnosis
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import (
    FakeCluster,
    FakeJournal,
    FakeMetrics,
    FixedClock,
    World,
    alert,
    hotel,
    incident,
)
from tests.support.anthropic_standin import (
    Failure,
    MessagesStandIn,
    Turn,
    messages_standin,
    text,
    tool_use,
)

ANSWER: dict[str, Any] = {
    "root_cause": {
        "service": "geo",
        "category": "virtualization/misconfiguration",
        "confidence": 0.9,
        "explanation": "Service geo targets port 9999 where nothing listens; search is refused.",
        "evidence": [0, 1],
        "suspect": {
            "kind": "Service",
            "name": "geo",
            "field": "spec.ports[0].targetPort",
            "current": "9999",
            "last_known_good": "8083",
        },
    },
    "alternatives": [
        {
            "service": "search",
            "category": "application/code_defect",
            "confidence": 0.1,
            "explanation": "search fails on its own",
            "evidence": [2],
        },
    ],
    "summary": "geo's Service points at the wrong port.",
}


@pytest.fixture
def standin() -> Iterator[MessagesStandIn]:
    with messages_standin() as server:
        yield server


def broken_geo() -> World:
    w = hotel()
    faults.target_port(w, "geo", 9999, caller="search", top="frontend")
    return w


def diagnose(
    world: World,
    server: MessagesStandIn,
    *,
    settings: ClaudeSettings | None = None,
    max_retries: int = 2,
    sleep: Any = time.sleep,
) -> Diagnosis:
    model = AnthropicModel(
        api_key="sk-ant-test-key-000000",
        base_url=server.base_url,
        timeout_s=5.0,
        max_retries=max_retries,
        max_retry_wait_s=0.05,
        sleep=sleep,
    )
    try:
        diagnoser = Diagnoser(
            cluster=FakeCluster(world),
            metrics=FakeMetrics(world),
            journal=FakeJournal(world),
            clock=FixedClock(),
            model=model,
            claude=settings or ClaudeSettings(max_steps=6, token_budget=20_000),
        )
        return diagnoser.diagnose(
            incident(world, "frontend"), [alert(world, "HighErrorRate", "frontend")]
        )
    finally:
        model.close()


def last_result(body: dict[str, Any]) -> dict[str, Any]:
    blocks = [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert blocks, "the last message carries a tool result"
    result: dict[str, Any] = json.loads(blocks[-1]["content"])
    result["is_error"] = blocks[-1].get("is_error", False)
    return result


def test_default_model_is_current_in_the_installed_sdk() -> None:
    from typing import get_args

    from anthropic._data import DEPRECATED_MODELS
    from anthropic.types import Model

    literals = get_args(get_args(Model)[0])
    assert DEFAULT_MODEL in literals
    assert DEFAULT_MODEL not in DEPRECATED_MODELS


def test_full_tool_use_loop_ends_in_a_valid_diagnosis(standin: MessagesStandIn) -> None:
    def after_services(body: dict[str, Any]) -> Turn:
        result = last_result(body)
        assert result["status"] == "success"
        assert any(
            row["service"] == "geo" and "8083->9999" in row["ports"] for row in result["data"]
        )
        return tool_use("get_logs", {"pod": "search-7d9f8-0", "tail_lines": 20})

    standin.add(tool_use("list_services", {}), after_services, tool_use("submit_diagnosis", ANSWER))
    d = diagnose(broken_geo(), standin)
    assert d.reasoner == f"claude:{DEFAULT_MODEL}"
    assert d.fallback_reason is None
    assert (d.top.service, str(d.top.category)) == ("geo", "virtualization/misconfiguration")
    assert d.tokens == 3 * 150
    assert len(standin.requests) == 3
    logs = last_result(standin.requests[2].body)
    assert logs["status"] == "success" and any(
        "connection refused" in line for line in logs["data"]
    )
    assert (
        suspects_of(d)[0].source == "object:Service/hotel-reservation/geo#spec.ports[0].targetPort"
    )
    first = standin.requests[0].body
    assert first["model"] == DEFAULT_MODEL
    assert "[0]" in first["messages"][0]["content"][0]["text"], (
        "the evidence bundle is in the prompt"
    )
    assert {t["name"] for t in first["tools"]} >= {"get_logs", "promql_query", "submit_diagnosis"}


def test_malformed_tool_input_is_answered_with_an_error_the_model_fixes(
    standin: MessagesStandIn,
) -> None:
    def fix_input(body: dict[str, Any]) -> Turn:
        result = last_result(body)
        assert result["is_error"] and result["status"] == "error"
        assert "invalid input for get_logs" in result["error"] and "pod" in result["error"]
        return tool_use("get_logs", {"pod": "geo-7d9f8-0"})

    bad_answer = {**ANSWER, "root_cause": {**ANSWER["root_cause"], "category": "cloud/oops"}}

    def fix_answer(body: dict[str, Any]) -> Turn:
        result = last_result(body)
        assert result["status"] == "error" and "root_cause.category" in result["error"]
        return tool_use("submit_diagnosis", ANSWER)

    standin.add(
        tool_use("get_logs", {"pod": 7, "lines": 10}),
        fix_input,
        tool_use("submit_diagnosis", bad_answer),
        fix_answer,
    )
    d = diagnose(broken_geo(), standin)
    assert d.reasoner.startswith("claude:") and d.top.service == "geo"
    assert len(standin.requests) == 4


def test_a_tool_error_quotes_the_bad_promql_and_the_model_corrects_it(
    standin: MessagesStandIn,
) -> None:
    bad = 'sum(rate(http_server_requests_total{namespace="hotel-reservation"}[5m])'

    def correct(body: dict[str, Any]) -> Turn:
        result = last_result(body)
        assert result["status"] == "error"
        assert bad in result["error"], "the error quotes the exact query"
        return tool_use("promql_query", {"query": "up"})

    def then_submit(body: dict[str, Any]) -> Turn:
        result = last_result(body)
        assert result["status"] == "no_data" and "'up'" in result["error"]
        return tool_use("submit_diagnosis", ANSWER)

    standin.add(tool_use("promql_query", {"query": bad}), correct, then_submit)
    d = diagnose(broken_geo(), standin)
    assert d.reasoner.startswith("claude:")
    assert d.top.service == "geo"


def test_unknown_service_and_out_of_range_evidence_are_sent_back(standin: MessagesStandIn) -> None:
    wrong = {
        **ANSWER,
        "root_cause": {**ANSWER["root_cause"], "service": "geo-db", "evidence": [999]},
    }

    def fix(body: dict[str, Any]) -> Turn:
        error = last_result(body)["error"]
        assert "'geo-db' is not a service" in error and "out of range" in error
        return tool_use("submit_diagnosis", ANSWER)

    standin.add(tool_use("submit_diagnosis", wrong), fix)
    assert diagnose(broken_geo(), standin).top.service == "geo"


def test_step_budget_exhaustion_falls_back_to_offline(standin: MessagesStandIn) -> None:
    standin.add(*(tool_use("list_pods", {}) for _ in range(5)))
    d = diagnose(broken_geo(), standin, settings=ClaudeSettings(max_steps=2, token_budget=50_000))
    assert d.reasoner == "offline"
    assert d.fallback_reason is not None and d.fallback_reason.startswith("StepBudgetExceeded")
    assert d.tokens == 2 * 150
    assert (d.top.service, str(d.top.category)) == ("geo", "virtualization/misconfiguration")
    assert len(standin.requests) == 2


def test_token_budget_exhaustion_falls_back_to_offline(standin: MessagesStandIn) -> None:
    standin.add(
        tool_use("list_pods", {}, input_tokens=900, output_tokens=50),
        tool_use("list_pods", {}, input_tokens=900, output_tokens=50),
        tool_use("submit_diagnosis", ANSWER),
    )
    d = diagnose(broken_geo(), standin, settings=ClaudeSettings(max_steps=10, token_budget=1500))
    assert d.reasoner == "offline"
    assert d.fallback_reason is not None and d.fallback_reason.startswith("TokenBudgetExceeded")
    assert d.tokens == 1900


def test_a_reply_without_tool_calls_is_nudged_to_submit(standin: MessagesStandIn) -> None:
    def nudged(body: dict[str, Any]) -> Turn:
        assert "submit_diagnosis" in body["messages"][-1]["content"][0]["text"]
        return tool_use("submit_diagnosis", ANSWER)

    standin.add(text("It is probably geo."), nudged)
    assert diagnose(broken_geo(), standin).reasoner.startswith("claude:")


def test_429_and_529_with_retry_after_are_retried_then_succeed(standin: MessagesStandIn) -> None:
    standin.add(
        Failure(status=429, headers={"retry-after": "0.01"}, kind="rate_limit_error"),
        Failure(status=529, headers={"retry-after-ms": "10"}, kind="overloaded_error"),
        tool_use("submit_diagnosis", ANSWER),
    )
    d = diagnose(broken_geo(), standin)
    assert d.reasoner.startswith("claude:") and d.fallback_reason is None
    assert len(standin.requests) == 3


def test_retry_after_is_capped(standin: MessagesStandIn) -> None:
    waits: list[float] = []
    standin.add(
        Failure(status=529, headers={"retry-after": "3600"}, kind="overloaded_error"),
        tool_use("submit_diagnosis", ANSWER),
    )
    d = diagnose(broken_geo(), standin, sleep=waits.append)
    assert d.reasoner.startswith("claude:")
    assert waits == [0.05], "an hour's Retry-After waits only the configured cap"


def test_retries_exhausted_fall_back_to_offline(standin: MessagesStandIn) -> None:
    standin.add(
        *(
            Failure(status=529, headers={"retry-after": "0"}, kind="overloaded_error")
            for _ in range(3)
        )
    )
    d = diagnose(broken_geo(), standin, max_retries=1)
    assert d.reasoner == "offline"
    assert d.fallback_reason is not None and d.fallback_reason.startswith("ModelUnavailable")
    assert "529" in d.fallback_reason
    assert len(standin.requests) == 2


def test_a_client_error_is_not_retried(standin: MessagesStandIn) -> None:
    standin.add(Failure(status=400, kind="invalid_request_error", message="bad request"))
    d = diagnose(broken_geo(), standin)
    assert d.reasoner == "offline" and "400" in (d.fallback_reason or "")
    assert len(standin.requests) == 1


SECRETS = (
    "geo-pw-14x",
    "S3cr3t-Mongo-77",
    "hunter2-xyz",
    "rootpw-991",
    "xoxb-1234567890-abcdefghij",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzdGF0dXMifQ.c2lnbmF0dXJlLXNlY3JldA",
)


def test_no_secret_from_a_seeded_corpus_reaches_any_prompt(standin: MessagesStandIn) -> None:
    w = broken_geo()
    w.config_maps["hotel-config"]["MONGO_PASSWORD"] = "S3cr3t-Mongo-77"
    w.config_maps["hotel-config"]["MONGO_URL"] = (
        "mongodb://admin:rootpw-991@mongodb-geo:27017/geo-db"
    )
    w.log(
        "search", "connecting to mongodb-geo with password=hunter2-xyz failed: connection refused"
    )
    w.log("search", f"calling slack with token {SECRETS[4]}: refused")
    w.log("geo", f"Authorization: Bearer {SECRETS[5]} rejected: not authorized")
    w.spec_container("geo")["env"].append({"name": "API_TOKEN", "value": "hunter2-xyz"})
    w.change(
        "Deployment",
        "geo",
        {"spec.template.spec.containers[0].env[3].value": ("[REDACTED]", "[REDACTED]")},
    )
    standin.add(
        tool_use("get_config_maps", {}),
        tool_use("get_logs", {"pod": "search-7d9f8-0"}),
        tool_use("get_logs", {"pod": "geo-7d9f8-0"}),
        tool_use("recent_changes", {"since_minutes": 60}),
        tool_use("list_pods", {}),
        tool_use("submit_diagnosis", ANSWER),
    )
    d = diagnose(w, standin, settings=ClaudeSettings(max_steps=8, token_budget=100_000))
    assert d.reasoner.startswith("claude:")
    sent = standin.prompts_text()
    assert "MONGO_PASSWORD" in sent and "[REDACTED]" in sent, "the keys are shown, not the values"
    for secret in SECRETS:
        assert secret not in sent, f"{secret!r} reached a prompt"
        assert all(secret not in e.detail and secret not in e.summary for e in d.evidence)
