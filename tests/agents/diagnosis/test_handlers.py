from __future__ import annotations

from pathlib import Path

import pytest

from agents.diagnosis.handlers import HandlerError, Widen, load_handlers, parse_handler
from tests.agents.diagnosis.world import alert, hotel


def test_built_in_handlers_load_with_one_default() -> None:
    handlers = load_handlers()
    assert handlers.default.name == "default"
    assert {"pod-failure", "service-errors", "latency", "capacity"} <= set(handlers.names())


@pytest.mark.parametrize(
    ("alertname", "expected"),
    [
        ("KubePodCrashLooping", "pod-failure"),
        ("HighErrorRate", "service-errors"),
        ("FrontendLatencyP99High", "latency"),
        ("KubeDeploymentReplicasMismatch", "capacity"),
        ("SomethingNobodyExpected", "default"),
    ],
)
def test_selection_by_alertname(alertname: str, expected: str) -> None:
    w = hotel()
    assert load_handlers().select([alert(w, alertname, "geo")]).name == expected


def test_label_patterns_and_priority(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: default\n")
    (tmp_path / "b.yaml").write_text(
        "name: mongo\npriority: 5\nmatch: {labels: {service: 'mongodb-*'}}\n"
        "widen: [service, namespace]\ncollect: {logs: {tail_lines: 10}}\n"
    )
    handlers = load_handlers(tmp_path)
    w = hotel()
    chosen = handlers.select([alert(w, "Anything", "mongodb-geo")])
    assert chosen.name == "mongo"
    assert chosen.widen == (Widen.SERVICE, Widen.NAMESPACE)
    assert chosen.collect.logs.tail_lines == 10
    assert handlers.select([alert(w, "Anything", "geo")]).name == "default"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("name: x\ncollect: {logs: {tail_lines: 100000}}\n", "collect.logs.tail_lines"),
        ("name: x\nwiden: [sideways]\n", "widen.0"),
        ("name: x\nunknown_field: 1\n", "unknown_field"),
        ("name: Bad Name\n", "name"),
        ("- a list\n", "(top level)"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_invalid_files_name_file_field_and_reason(tmp_path: Path, text: str, needle: str) -> None:
    (tmp_path / "default.yaml").write_text("name: default\n")
    bad = tmp_path / "broken.yaml"
    bad.write_text(text)
    with pytest.raises(HandlerError) as e:
        load_handlers(tmp_path)
    assert str(bad) in str(e.value)
    assert needle in str(e.value)


def test_exactly_one_default_and_unique_names(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: a\nmatch: {alertnames: ['X*']}\n")
    with pytest.raises(HandlerError, match="exactly one handler must have an empty match"):
        load_handlers(tmp_path)
    (tmp_path / "b.yaml").write_text("name: a\n")
    with pytest.raises(HandlerError, match="'a' is also defined"):
        load_handlers(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(HandlerError, match="no handler files"):
        load_handlers(empty)


def test_parse_handler_defaults_are_bounded() -> None:
    h = parse_handler({"name": "n"}, source="inline")
    assert h.collect.logs.max_pods <= 50 and h.collect.events.limit <= 2000
    assert h.thresholds.error_ratio == 0.05
