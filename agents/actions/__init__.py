"""The action catalog (DESIGN section 5): typed writes, each with its targets, risk tier,
description and — by construction — its inverse (re-apply the snapshot)."""

from agents.actions.admission import admit
from agents.actions.base import (
    Action,
    Delete,
    Replace,
    Write,
    action_from_json,
    action_kinds,
    action_to_json,
    actions_hash,
)
from agents.actions.inadmissible import DataChange, DeleteObject, ExecInContainer
from agents.actions.objects import (
    CordonNode,
    DeletePod,
    MergePatch,
    PatchService,
    SetConfigMapKeys,
    SetHpaBounds,
)
from agents.actions.workload import (
    RollbackWorkload,
    RolloutRestart,
    ScaleWorkload,
    SetContainerEnv,
    SetImage,
    SetResources,
    SetScheduling,
)

__all__ = [
    "Action",
    "CordonNode",
    "DataChange",
    "Delete",
    "DeleteObject",
    "DeletePod",
    "ExecInContainer",
    "MergePatch",
    "PatchService",
    "Replace",
    "RollbackWorkload",
    "RolloutRestart",
    "ScaleWorkload",
    "SetConfigMapKeys",
    "SetContainerEnv",
    "SetHpaBounds",
    "SetImage",
    "SetResources",
    "SetScheduling",
    "Write",
    "action_from_json",
    "action_kinds",
    "action_to_json",
    "actions_hash",
    "admit",
]
