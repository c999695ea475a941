"""Preview a plan: admission and a server-side dry run of each action against the live state,
with the diff the approval message shows. Writes nothing and takes no lock, so a plan can be
previewed while another transaction holds the scope.

Because it writes nothing, an action whose read or dry run met a `TransientError` (timeout,
reset, 5xx, 429) is previewed again, up to `PREVIEW_TRIES` times, after the error's
`retry_after_s` (capped): one 503 used to make the action inadmissible, and a plan with no
admissible action escalates to a person (the transient-fault matrix, issue 14).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.actions import Action, Replace, admit
from agents.actions.snapshot import unified_diff
from agents.errors import ClusterError, Inadmissible, TransientError
from agents.model import Scope
from agents.ports import ClusterReader, ClusterWriter

logger = logging.getLogger(__name__)

PREVIEW_TRIES = 3
#: The longest wait between tries, whatever Retry-After asks: a preview runs before a plan is
#: posted, and a person is waiting for it.
PREVIEW_MAX_WAIT_S = 2.0


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
    sleep: Callable[[float], None] = time.sleep,
) -> list[PreviewedAction]:
    results: list[PreviewedAction] = []
    for action in actions:
        for attempt in range(1, PREVIEW_TRIES + 1):
            try:
                results.append(_preview_one(reader, writer, scope, action, field_manager))
                break
            except TransientError as e:
                if attempt == PREVIEW_TRIES:
                    results.append(PreviewedAction(action=action, admitted=False, error=str(e)))
                    break
                wait = min(max(e.retry_after_s, 0.0), PREVIEW_MAX_WAIT_S)
                logger.info(
                    "preview of %s: %s; try %d in %.1f s", action.target, e, attempt + 1, wait
                )
                sleep(wait)
            except (ClusterError, Inadmissible) as e:
                results.append(PreviewedAction(action=action, admitted=False, error=str(e)))
                break
    return results


def _preview_one(
    reader: ClusterReader, writer: ClusterWriter, scope: Scope, action: Action, field_manager: str
) -> PreviewedAction:
    admit(action, scope)
    live = reader.get(action.target)
    write = action.desired(live, reader)
    if isinstance(write, Replace):
        dry = writer.replace(write.obj, dry_run=True, field_manager=field_manager)
        diff = unified_diff(live.body, dry.body, name=str(action.target))
    else:
        writer.delete(write.ref, dry_run=True, resource_version=live.resource_version)
        diff = f"- {write.ref} (deleted; its controller recreates it)"
    return PreviewedAction(action=action, admitted=True, diff=diff)
