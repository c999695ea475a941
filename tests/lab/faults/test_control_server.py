"""The lab's control endpoint over HTTP: list, inject (and its errors), verdicts, recover."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from lab.faults.server import ControlServer, FaultControl
from lab.sim.world import LabWorld, WorldConfig


@pytest.fixture(scope="module")
def control() -> Iterator[tuple[LabWorld, str]]:
    with LabWorld(WorldConfig(apps=("hotel-reservation",), seed=0)) as world:
        world.wait_healthy(timeout_s=120)
        world.advance(30)
        server = ControlServer(FaultControl(world))
        url = server.start()
        try:
            yield world, url
        finally:
            server.stop()


def _call(url: str, body: Any = None) -> tuple[int, Any]:
    data = (
        None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    )
    request = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_lists_the_library(control: tuple[LabWorld, str]) -> None:
    _, url = control
    status, body = _call(f"{url}/lab/faults")
    assert status == 200
    ids = [f["id"] for f in body["faults"]]
    assert len(ids) >= 14 and ids[-1] == "no-fault"
    network = next(f for f in body["faults"] if f["id"] == "network-delay")
    assert network["undoable_fix"] is False and network["time_bounded"] is True
    assert network["category"] == "virtualization/network"
    assert [p["name"] for p in network["params"]] == ["delay_ms", "duration_s"]


def test_inject_errors_are_one_line_with_a_status(control: tuple[LabWorld, str]) -> None:
    _, url = control
    cases = [
        ("nope", {}, 404, "unknown fault 'nope'"),
        ("scale-to-zero", {"target": "nope"}, 400, "has no service 'nope'"),
        ("scale-to-zero", {"params": {"replicas": "x"}}, 400, "expected an integer"),
        ("scale-to-zero", {"params": ["replicas"]}, 400, "params must be an object"),
        ("scale-to-zero", {"app": 3}, 400, "app must be a non-empty string"),
        ("scale-to-zero", b"{not json", 400, "the body is not JSON"),
    ]
    for fault_id, body, code, message in cases:
        status, answer = _call(f"{url}/lab/faults/{fault_id}", body)
        assert status == code, (fault_id, body, answer)
        assert message in answer["error"] and "\n" not in answer["error"]


def test_inject_verdict_and_recover(control: tuple[LabWorld, str]) -> None:
    world, url = control
    status, body = _call(f"{url}/lab/faults/scale-to-zero", {"target": "rate"})
    assert status == 200
    injection = body["injection"]
    assert injection["changes"] == ["Deployment/rate: spec.replicas 1 → 0"]
    assert injection["truth"] == {
        "root_causes": ["rate"],
        "category": "virtualization/operation_error",
        "undoable_fix": True,
        "expects_incident": True,
    }
    world.advance(10)
    _, listed = _call(f"{url}/lab/injections")
    row = listed["injections"][injection["index"]]
    assert row["mitigated"] is False
    assert "Deployment/rate is scaled to zero (it had 1)" in row["problems"]

    status, done = _call(f"{url}/lab/injections/{injection['index']}/recover", {})
    assert status == 200 and done["recovered"] == ["Deployment/rate: restored"]
    world.advance(60)
    _, listed = _call(f"{url}/lab/injections")
    assert listed["injections"][injection["index"]]["mitigated"] is True
    status, missing = _call(f"{url}/lab/injections/99/recover", {})
    assert status == 404 and "no injection #99" in missing["error"]
