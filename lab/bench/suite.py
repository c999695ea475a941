"""Loading a suite: every `*.yaml`/`*.yml` file of a directory, one scenario per file.

A file with a problem is reported as `ScenarioError(file, line, field, reason)` and left out;
the other scenarios still load and run (the CLI exits non-zero at the end). Problems are found
in two passes: the schema (`lab.bench.scenario`, pydantic), then what needs the fault library
and the app's model — an unknown fault, a fault that does not apply to the app, a target or a
noise target that is not a service of the app, parameters the fault refuses, a duplicate id.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from lab.apps import load_app
from lab.bench.scenario import Expect, Scenario
from lab.faults import BadParameter, UnknownFault, fault
from lab.sim import clusterdns

logger = logging.getLogger(__name__)

SUFFIXES = (".yaml", ".yml")
#: The public suite, shipped with the package.
SUITE_DIR = Path(__file__).resolve().parent.parent / "scenarios"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioError:
    """One problem with one scenario file."""

    file: str
    line: int
    field: str  # dotted path, e.g. `faults.0.target`; `(file)` for the file itself
    reason: str
    scenario: str | None = None  # the id, when the file got that far

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedScenario:
    scenario: Scenario
    file: str
    expect: Expect  # explicit, or derived from the faults


@dataclass(frozen=True, slots=True, kw_only=True)
class Suite:
    scenarios: tuple[LoadedScenario, ...]
    errors: tuple[ScenarioError, ...]

    def select(self, scenario_id: str) -> Suite:
        return Suite(
            scenarios=tuple(s for s in self.scenarios if s.scenario.id == scenario_id),
            errors=tuple(e for e in self.errors if e.scenario in (None, scenario_id)),
        )


def expectation(scenario: Scenario) -> Expect:
    """The scenario's `expect`, or: no-incident for a control, escalated when any fault has no
    undoable fix, mitigated otherwise."""
    if scenario.expect is not None:
        return scenario.expect
    if scenario.is_control:
        return Expect.NO_INCIDENT
    if any(not fault(f.fault).undoable_fix for f in scenario.real_faults):
        return Expect.ESCALATED
    return Expect.MITIGATED


def load_suite(directory: Path) -> Suite:
    """Every scenario file of `directory` (not recursive), in file-name order."""
    if not directory.is_dir():
        error = ScenarioError(
            file=str(directory), line=1, field="(suite)", reason="not a directory"
        )
        return Suite(scenarios=(), errors=(error,))
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in SUFFIXES)
    scenarios: list[LoadedScenario] = []
    errors: list[ScenarioError] = []
    seen: dict[str, str] = {}
    for path in files:
        loaded, problems = load_scenario(path)
        if loaded is not None:
            first = seen.get(loaded.scenario.id)
            if first is not None:
                problems = [
                    ScenarioError(
                        file=str(path),
                        line=1,
                        field="id",
                        reason=f"duplicate id {loaded.scenario.id!r} (also in {first})",
                        scenario=loaded.scenario.id,
                    )
                ]
                loaded = None
            else:
                seen[loaded.scenario.id] = str(path)
        errors.extend(problems)
        if loaded is not None:
            scenarios.append(loaded)
    if not files:
        errors.append(
            ScenarioError(
                file=str(directory), line=1, field="(suite)", reason="no *.yaml scenario files"
            )
        )
    return Suite(scenarios=tuple(scenarios), errors=tuple(errors))


def load_scenario(path: Path) -> tuple[LoadedScenario | None, list[ScenarioError]]:
    """One file: the scenario, or None and what is wrong with it."""
    file = str(path)

    def error(line: int, field: str, reason: str, sid: str | None = None) -> ScenarioError:
        return ScenarioError(file=file, line=line, field=field, reason=reason, scenario=sid)

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        return None, [error(1, "(file)", f"cannot read: {e.strerror}")]
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        return None, [error(line, "(yaml)", str(getattr(e, "problem", None) or e))]
    if not isinstance(data, dict):
        return None, [error(1, "(top level)", "expected a mapping (id, app, faults, ...)")]
    sid = data.get("id") if isinstance(data.get("id"), str) else None
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as e:
        return None, [
            error(
                line_of(root, tuple(item["loc"])),
                ".".join(str(p) for p in item["loc"]) or "(top level)",
                item["msg"].removeprefix("Value error, "),
                sid,
            )
            for item in e.errors()
        ]
    problems = [
        error(line_of(root, loc), ".".join(str(p) for p in loc), reason, scenario.id)
        for loc, reason in semantic_problems(scenario)
    ]
    if problems:
        return None, problems
    return LoadedScenario(scenario=scenario, file=file, expect=expectation(scenario)), []


@cache
def _services(app: str) -> frozenset[str]:
    return frozenset(load_app(app).model.services)


def semantic_problems(scenario: Scenario) -> list[tuple[tuple[str | int, ...], str]]:
    """What the schema cannot know: the fault library's and the app model's answers."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    services = _services(scenario.app)
    for index, step in enumerate(scenario.faults):
        where: tuple[str | int, ...] = ("faults", index)
        try:
            chosen = fault(step.fault)
        except UnknownFault as e:
            out.append(((*where, "fault"), str(e)))
            continue
        if scenario.app not in chosen.apps:
            out.append(
                (
                    (*where, "fault"),
                    f"{chosen.id} does not apply to {scenario.app}; it applies "
                    f"to {', '.join(chosen.apps)}",
                )
            )
            continue
        if step.target is not None and step.target not in services:
            out.append(((*where, "target"), _not_a_service(step.target, scenario.app, services)))
        known = {p.name: p for p in chosen.params}
        for name, value in step.params.items():
            spec = known.get(name)
            if spec is None:
                names = ", ".join(known) or "none"
                out.append(((*where, "params", name), f"unknown parameter (parameters: {names})"))
                continue
            try:
                spec.parse(value)
            except BadParameter as e:
                out.append(((*where, "params", name), str(e)))
    for index, noise in enumerate(scenario.noise):
        target = getattr(noise, "target", None)
        if isinstance(target, str) and target not in services:
            out.append((("noise", index, "target"), _not_a_service(target, scenario.app, services)))
    if scenario.ground_truth is not None:
        for index, name in enumerate(scenario.ground_truth.root_causes):
            # A cluster component the apps depend on (CoreDNS) can be the root cause too.
            if name not in services and name not in CLUSTER_COMPONENTS:
                out.append(
                    (
                        ("ground_truth", "root_causes", index),
                        _not_a_service(name, scenario.app, services),
                    )
                )
    return out


#: Root causes outside the app's namespace that a scenario may name: they are what the fault
#: library records for a cluster-wide fault (cluster-dns-failing records CoreDNS).
CLUSTER_COMPONENTS = frozenset({clusterdns.DEPLOYMENT})


def _not_a_service(name: str, app: str, services: frozenset[str]) -> str:
    return f"{name!r} is not a service of {app} (services: {', '.join(sorted(services))})"


def line_of(node: yaml.Node | None, loc: Sequence[Any]) -> int:
    """1-based line of the YAML node at `loc`, or of its nearest existing parent."""
    line = node.start_mark.line + 1 if node is not None else 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == str(part)), None)
            if child is None:
                key = next((k for k, _ in node.value if k.value == str(part)), None)
                if key is not None:
                    return int(key.start_mark.line) + 1
                continue  # a union's tag in pydantic's path (`noise.0.delete-pod.target`)
            node = child
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
        else:
            return line
        line = node.start_mark.line + 1
    return line
