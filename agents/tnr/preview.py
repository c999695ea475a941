"""Preview a plan: admission and a server-side dry run of each action against the live state,
with the diff the approval message shows. Writes nothing and takes no lock, so a plan can be
previewed while another transaction holds the scope."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.actions import Action, Replace, admit
from agents.actions.snapshot import unified_diff
from agents.errors import ClusterError, Inadmissible
from agents.model import Scope
from agents.ports import ClusterReader, ClusterWriter


@dataclass(frozen=True, slots=True, kw_only=True)
class PreviewedAction:
    action: Action
    admitted: bool
    diff: str = ""
    error: str | None = None  # admission refusal or dry-run error, for the planner


def preview(
    reader: ClusterReader,
    writer: ClusterWriter,
    scope: Scope,
    actions: Sequence[Action],
    *,
    field_manager: str = "stratus",
) -> list[PreviewedAction]:
    results: list[PreviewedAction] = []
    for action in actions:
        try:
            admit(action, scope)
            live = reader.get(action.target)
            write = action.desired(live, reader)
            if isinstance(write, Replace):
                dry = writer.replace(write.obj, dry_run=True, field_manager=field_manager)
                diff = unified_diff(live.body, dry.body, name=str(action.target))
            else:
                writer.delete(write.ref, dry_run=True, resource_version=live.resource_version)
                diff = f"- {write.ref} (deleted; its controller recreates it)"
        except (ClusterError, Inadmissible) as e:
            results.append(PreviewedAction(action=action, admitted=False, error=str(e)))
            continue
        results.append(PreviewedAction(action=action, admitted=True, diff=diff))
    return results
