"""A Deployment's status as the controller reports it: replica counts summed over its
ReplicaSets, and the Available and Progressing conditions with the real reasons
(MinimumReplicasAvailable, NewReplicaSetCreated, ReplicaSetUpdated, NewReplicaSetAvailable,
ProgressDeadlineExceeded) that `kubectl rollout status` and Stratus's settle check read."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from agents.model import JsonObject
from lab.kube.controllers.base import condition, set_condition
from lab.kube.jsonutil import get_path, parse_time, rfc3339


def resolve(value: Any, total: int, *, round_up: bool) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return 0


def surge_and_unavailable(deployment: JsonObject) -> tuple[int, int]:
    spec = deployment.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    strategy = spec.get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = resolve(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = resolve(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, min(unavailable, replicas)


def _status_count(rs: JsonObject | None, field: str) -> int:
    return int(get_path(rs, "status", field, default=0))


def rollout_status(
    deployment: JsonObject,
    new_rs: JsonObject | None,
    old_sets: list[JsonObject],
    now: datetime,
    *,
    created: bool,
) -> tuple[JsonObject, datetime | None]:
    """The Deployment's status, and when to look again (the progress deadline)."""
    spec = deployment.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    all_sets = [rs for rs in [new_rs, *old_sets] if rs is not None]
    _, unavailable = surge_and_unavailable(deployment)
    old_status = deployment.get("status") or {}
    status: JsonObject = {
        "observedGeneration": int(deployment["metadata"].get("generation", 1)),
        "replicas": sum(_status_count(rs, "replicas") for rs in all_sets),
        "updatedReplicas": _status_count(new_rs, "replicas") if new_rs else 0,
        "readyReplicas": sum(_status_count(rs, "readyReplicas") for rs in all_sets),
        "availableReplicas": sum(_status_count(rs, "availableReplicas") for rs in all_sets),
    }
    missing = replicas - status["availableReplicas"]
    if missing > 0:
        status["unavailableReplicas"] = missing
    if old_status.get("collisionCount"):
        status["collisionCount"] = old_status["collisionCount"]
    stamp = rfc3339(now)
    conditions = [dict(c) for c in old_status.get("conditions") or []]
    for c in conditions:
        c.setdefault("lastUpdateTime", c.get("lastTransitionTime", stamp))
    if status["availableReplicas"] >= replicas - unavailable:
        conditions = _condition(
            conditions,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            stamp=stamp,
        )
    else:
        conditions = _condition(
            conditions,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            stamp=stamp,
        )
    conditions, recheck = _progressing(
        deployment,
        new_rs=new_rs,
        status=status,
        conditions=conditions,
        now=now,
        created=created,
    )
    status["conditions"] = sorted(conditions, key=lambda c: c["type"] != "Available")
    return status, recheck


def _progressing(
    deployment: JsonObject,
    *,
    new_rs: JsonObject | None,
    status: JsonObject,
    conditions: list[JsonObject],
    now: datetime,
    created: bool,
) -> tuple[list[JsonObject], datetime | None]:
    stamp = rfc3339(now)
    spec = deployment.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    name = new_rs["metadata"]["name"] if new_rs else ""
    if spec.get("paused"):
        return (
            _condition(
                conditions,
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused",
                stamp=stamp,
            ),
            None,
        )
    complete = (
        status["updatedReplicas"] == replicas
        and status["replicas"] == replicas
        and status["availableReplicas"] >= replicas
    )
    old = deployment.get("status") or {}
    progressed = any(
        status.get(k, 0) != old.get(k, 0)
        for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
    )
    current = condition(deployment, "Progressing")
    if complete:
        return (
            _condition(
                conditions,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{name}" has successfully progressed.',
                stamp=stamp,
            ),
            None,
        )
    if created:
        return (
            _condition(
                conditions,
                "Progressing",
                "True",
                "NewReplicaSetCreated",
                f'Created new replica set "{name}"',
                stamp=stamp,
                touch=True,
            ),
            None,
        )
    deadline_s = spec.get("progressDeadlineSeconds")
    if progressed or current is None or current.get("reason") == "NewReplicaSetAvailable":
        updated = _condition(
            conditions,
            "Progressing",
            "True",
            "ReplicaSetUpdated",
            f'ReplicaSet "{name}" is progressing.',
            stamp=stamp,
            touch=True,
        )
        recheck = now + timedelta(seconds=int(deadline_s) + 1) if deadline_s is not None else None
        return updated, recheck
    if deadline_s is not None and current.get("reason") != "ProgressDeadlineExceeded":
        last = parse_time(current.get("lastUpdateTime") or current.get("lastTransitionTime"))
        if last is not None and (now - last).total_seconds() > int(deadline_s):
            return (
                _condition(
                    conditions,
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    f'ReplicaSet "{name}" has timed out progressing.',
                    stamp=stamp,
                ),
                None,
            )
        if last is not None:
            return conditions, last + timedelta(seconds=int(deadline_s) + 1)
    return conditions, None


def _condition(
    conditions: list[JsonObject],
    kind: str,
    status: str,
    reason: str,
    message: str,
    *,
    stamp: str,
    touch: bool = False,
) -> list[JsonObject]:
    """Set a Deployment condition (these carry lastUpdateTime as well)."""
    out = set_condition(conditions, kind, status, reason, message, now=stamp, update_time=touch)
    for c in out:
        if c["type"] == kind:
            c.setdefault("lastUpdateTime", stamp)
    return out
