"""The scenario format and the public suite: what loads, what is refused and how it is reported
(file, line, field, reason), and the README's schema kept equal to the models."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from lab.bench import SUITE_DIR, Expect, load_suite
from lab.bench.schema import README, with_schema
from lab.faults import faults

GOOD = """\
id: good-one
app: hotel-reservation
description: a fault
faults:
  - {fault: wrong-target-port, target: geo, at: 30}
ground_truth: {root_causes: [geo], category: virtualization/misconfiguration}
"""


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_public_suite_loads_and_covers_every_fault_both_apps_and_each_kind() -> None:
    suite = load_suite(SUITE_DIR)
    assert suite.errors == ()
    scenarios = [s.scenario for s in suite.scenarios]
    assert len(scenarios) >= 24
    assert {s.app for s in scenarios} == {"hotel-reservation", "online-shop"}
    used = {step.fault for s in scenarios for step in s.faults}
    assert used == {f.id for f in faults()}
    expects = Counter(s.expect for s in suite.scenarios)
    assert expects[Expect.NO_INCIDENT] >= 3
    assert expects[Expect.ESCALATED] >= 3
    hard = [s for s in scenarios if len(s.real_faults) >= 2 or "misleading" in s.tags]
    assert len(hard) >= 3
    for loaded in suite.scenarios:
        assert Path(loaded.file).stem == loaded.scenario.id
        if loaded.expect is Expect.NO_INCIDENT:
            assert loaded.scenario.time_limits.total >= 600
            assert loaded.scenario.noise, "a control without noise proves little"


def test_expectations_default_from_the_faults(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", GOOD)
    _write(
        tmp_path,
        "b.yaml",
        GOOD.replace("good-one", "unfixable")
        .replace("{fault: wrong-target-port, target: geo, at: 30}", "{fault: network-loss, at: 5}")
        .replace("virtualization/misconfiguration", "virtualization/network"),
    )
    _write(
        tmp_path,
        "c.yaml",
        "id: quiet\napp: online-shop\ndescription: d\nfaults: [{fault: no-fault}]\n"
        "noise: [{kind: delete-pod, target: frontend, at: 5}]\n",
    )
    suite = load_suite(tmp_path)
    assert suite.errors == ()
    assert [(s.scenario.id, s.expect) for s in suite.scenarios] == [
        ("good-one", Expect.MITIGATED),
        ("unfixable", Expect.ESCALATED),
        ("quiet", Expect.NO_INCIDENT),
    ]


@pytest.mark.parametrize(
    ("text", "line", "field", "reason"),
    [
        (GOOD.replace("target: geo", "target: gepo"), 5, "faults.0.target", "not a service"),
        (GOOD.replace("wrong-target-port", "wrong-port"), 5, "faults.0.fault", "unknown fault"),
        (GOOD.replace("at: 30", "at: -1"), 5, "faults.0.at", "greater than or equal to 0"),
        (GOOD.replace("app: hotel-reservation", "app: shop"), 2, "app", "hotel-reservation"),
        (
            GOOD.replace("target: geo, at: 30", "target: geo, params: {port: 0}, at: 30"),
            5,
            "faults.0.params.port",
            "must be ≥ 1",
        ),
        (
            GOOD.replace("target: geo, at: 30", "target: geo, params: {speed: 3}, at: 30"),
            5,
            "faults.0.params.speed",
            "unknown parameter",
        ),
        (
            GOOD.replace("virtualization/misconfiguration", "virtualization/oops"),
            6,
            "ground_truth.category",
            "not a category",
        ),
        (GOOD.replace("ground_truth", "# ground_truth"), 1, "(top level)", "ground_truth is"),
        (
            GOOD + "noise:\n  - {kind: delete-pod, at: 5}\n",
            8,
            "noise.0.delete-pod.target",
            "Field required",
        ),
        (GOOD + "noise:\n  - {kind: reboot, target: geo, at: 5}\n", 8, "noise.0", "kind"),
        (GOOD + "colour: blue\n", 7, "colour", "Extra inputs"),
        (GOOD.replace("\ndescription", "\n\tdescription"), 3, "(yaml)", "cannot start any token"),
        ("- just\n- a list\n", 1, "(top level)", "expected a mapping"),
    ],
)
def test_a_broken_file_is_reported_with_file_line_field_and_reason_and_the_rest_loads(
    tmp_path: Path, text: str, line: int, field: str, reason: str
) -> None:
    broken = _write(tmp_path, "broken.yaml", text)
    _write(tmp_path, "good.yaml", GOOD)
    suite = load_suite(tmp_path)
    assert [s.scenario.id for s in suite.scenarios] == ["good-one"]
    assert suite.errors, "the broken file must be reported"
    error = suite.errors[0]
    assert (error.file, error.line, error.field) == (str(broken), line, field), str(error)
    assert reason in error.reason, str(error)
    assert str(error).startswith(f"{broken}:{line}: {field}: ")


def test_duplicate_ids_and_an_empty_directory_are_errors(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", GOOD)
    _write(tmp_path, "b.yaml", GOOD)
    suite = load_suite(tmp_path)
    assert len(suite.scenarios) == 1
    [error] = suite.errors
    assert error.field == "id" and "duplicate id 'good-one'" in error.reason
    empty = tmp_path / "empty"
    empty.mkdir()
    assert load_suite(empty).errors[0].reason == "no *.yaml scenario files"


def test_the_readme_schema_is_the_one_generated_from_the_models() -> None:
    text = README.read_text(encoding="utf-8")
    assert with_schema(text) == text, "run: python -m lab.bench.schema"
    assert '"discriminator"' in text and '"delete-pod"' in text
