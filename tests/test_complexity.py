"""No function in `agents`, `bot` or `storage`, nor in the bench's scorer, is above cyclomatic
complexity 15 as radon counts it (issue 19): a function that branches more than that is split
into steps with names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from radon.complexity import cc_visit

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 15
CHECKED = [
    *sorted((ROOT / "agents").rglob("*.py")),
    *sorted((ROOT / "bot").rglob("*.py")),
    *sorted((ROOT / "storage").rglob("*.py")),
    ROOT / "lab" / "bench" / "score.py",
]


def _functions(blocks: list[Any]) -> Iterator[Any]:
    """Every function radon found: it lists methods beside their classes (the classes' own
    figure is an aggregate, left out); closures hang under their function."""
    for block in blocks:
        if not hasattr(block, "methods"):
            yield block
            yield from _functions(getattr(block, "closures", []))


def _over(source: str) -> list[Any]:
    return [f for f in _functions(cc_visit(source)) if f.complexity > LIMIT]


def test_no_function_is_above_the_complexity_limit() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{f.lineno} {f.fullname} ({f.complexity})"
        for path in CHECKED
        for f in _over(path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)


def test_the_limit_catches_a_branchy_method_or_closure() -> None:
    branches = "\n".join(f"        if x == {i}:\n            return {i}" for i in range(LIMIT + 1))
    method = f"class C:\n    def f(self, x):\n{branches}\n        return -1\n"
    closure = f"def outer():\n    def f(x):\n{branches}\n        return -1\n    return f\n"
    assert [f.name for f in _over(method)] == ["f"]
    assert [f.name for f in _over(closure)] == ["f"]
