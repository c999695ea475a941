"""Admission: which actions the engine will execute at all (DESIGN section 3, rule 2).

Checked before any write and before the dry run. A refusal is final for that action: the
planner may propose another, or the incident escalates with the runbook text.
"""

from __future__ import annotations

from agents.actions.base import Action
from agents.actions.inadmissible import UNDELETABLE_KINDS, DeleteObject
from agents.errors import Inadmissible
from agents.model import Scope

CLUSTER_SCOPED_KINDS = frozenset({"Node"})


def admit(action: Action, scope: Scope) -> None:
    """Raise `Inadmissible` with the reason when the engine must not run `action` in `scope`."""
    target = action.target
    if not action.has_inverse:
        if isinstance(action, DeleteObject) and target.kind in UNDELETABLE_KINDS:
            raise Inadmissible(f"deleting a {target.kind} loses data and cannot be undone")
        raise Inadmissible(f"{action.describe()}: this action has no inverse")
    if target.kind not in action.target_kinds:
        allowed = ", ".join(sorted(action.target_kinds))
        raise Inadmissible(f"{action.kind} applies to {allowed}, not {target.kind}")
    if target.kind in CLUSTER_SCOPED_KINDS:
        if target.namespace is not None:
            raise Inadmissible(f"{target.kind} is cluster-scoped; it has no namespace")
    elif target.namespace != scope.namespace:
        raise Inadmissible(f"{target} is outside the transaction's namespace {scope.namespace!r}")
