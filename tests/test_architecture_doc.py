"""`docs/architecture.md` names real code.

The doc's hop list ("one incident, alert to Undo") is only worth reading while every function
it names still exists under that name: a rename or a split that leaves the doc behind fails
here, naming the references to fix. The floor on the count keeps a doc that lost its list (or
a reference style this pattern no longer sees) from passing with nothing checked."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"

#: `package.module:Name` or `package.module:Class.method`, in backticks on one line.
REFERENCE = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)`")

#: Fewer than this and the hop list is gone, not merely short.
MIN_REFERENCES = 12


def references(text: str) -> list[tuple[str, str]]:
    """Each distinct (module, attribute path) in the order the doc names them."""
    return list(dict.fromkeys(REFERENCE.findall(text)))


def unresolved(module_name: str, path: str) -> str | None:
    """Why `module_name:path` does not resolve, or None when it does."""
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as e:
        return f"cannot import {module_name}: {e}"
    walked = module_name
    for name in path.split("."):
        if not hasattr(target, name):
            return f"{walked} has no attribute {name!r}"
        target = getattr(target, name)
        walked = f"{walked}.{name}"
    return None


def test_the_hop_list_is_there() -> None:
    found = references(DOC.read_text(encoding="utf-8"))
    assert len(found) >= MIN_REFERENCES, (
        f"{DOC.name} names {len(found)} `module:function` references; "
        f"the hop list needs at least {MIN_REFERENCES}"
    )


def test_every_reference_resolves() -> None:
    broken = [
        f"`{module}:{path}`: {why}"
        for module, path in references(DOC.read_text(encoding="utf-8"))
        if (why := unresolved(module, path)) is not None
    ]
    assert not broken, f"{DOC.name} names code that is not there:\n" + "\n".join(broken)


def test_a_missing_name_is_reported() -> None:
    """The check is not vacuous: a renamed method and an unknown module are both caught."""
    text = "`bot.operations:IncidentOps.no_such_step` and `agents.no_such_module:thing`"
    found = references(text)
    assert found == [
        ("bot.operations", "IncidentOps.no_such_step"),
        ("agents.no_such_module", "thing"),
    ]
    assert unresolved(*found[0]) == "bot.operations.IncidentOps has no attribute 'no_such_step'"
    assert (unresolved(*found[1]) or "").startswith("cannot import agents.no_such_module")
