"""The Job controller (batch/v1): pods that run to completion, retried up to backoffLimit.

It runs `parallelism` pods at a time until `completions` succeed. A failed pod (phase Failed,
which the kubelet sets for a container that exits non-zero under restartPolicy Never) is
replaced after an exponential back-off (10 s, doubling, at most 6 min) — until more than
`backoffLimit` have failed: then the Job gets FailureTarget and Failed conditions with reason
BackoffLimitExceeded, its running pods are deleted, and a Warning event says "Job has reached
the specified backoff limit". The failed pods stay, for their logs, as on a real cluster.

Simplifications: NonIndexed completion only; restarts in place under restartPolicy OnFailure
count towards the limit only through the pod's phase (the real controller also counts
container restarts); no podFailurePolicy, no activeDeadlineSeconds, no TTL after finishing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.controllers.base import (
    CONTROLLER_MANAGER,
    WorkQueue,
    condition,
    controller_of,
    iter_owned,
    pod_active,
    pod_ready,
    rt_of,
    run_keys,
    set_condition,
    write_status,
)
from lab.kube.controllers.replicaset import pod_from_template
from lab.kube.errors import ApiError, NotFound
from lab.kube.jsonutil import copy_obj, get_path, parse_time, rfc3339
from lab.kube.store import Change

COMPONENT = "job-controller"
BACKOFF_BASE = timedelta(seconds=10)
BACKOFF_MAX = timedelta(minutes=6)


def _finished(job: JsonObject) -> bool:
    return any(
        (condition(job, kind) or {}).get("status") == "True" for kind in ("Complete", "Failed")
    )


def _last_failure(pods: list[JsonObject]) -> datetime | None:
    """When the latest failed pod's container finished (or the pod was last seen changing)."""
    stamps = []
    for pod in pods:
        for cs in get_path(pod, "status", "containerStatuses", default=[]) or []:
            finished = parse_time(get_path(cs, "state", "terminated", "finishedAt"))
            if finished is not None:
                stamps.append(finished)
    return max(stamps, default=None)


class JobController:
    name = "job"

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.queue = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind == "Job" and change.type != "DELETED":
            self.queue.add((change.namespace, change.name))
        elif change.kind == "Pod":
            for obj in (change.obj, change.old):
                ref = controller_of(obj)
                if ref is not None and ref.get("kind") == "Job":
                    self.queue.add((change.namespace, str(ref.get("name"))))

    def sync(self, now: datetime) -> bool:
        return run_keys(self.name, self.queue.pop_ready(now), lambda k: self._sync(k, now))

    def _sync(self, key: tuple[str, str], now: datetime) -> None:
        stored = self.api.store.get("Job", *key)
        if stored is None:
            return
        job = stored.obj
        if _finished(job) or get_path(job, "metadata", "deletionTimestamp"):
            return
        namespace = key[0]
        spec = job.get("spec") or {}
        pods = list(iter_owned(self.api, "Pod", namespace, job["metadata"]["uid"]))
        active = [p for p in pods if pod_active(p)]
        succeeded = sum(1 for p in pods if get_path(p, "status", "phase") == "Succeeded")
        failed_pods = [p for p in pods if get_path(p, "status", "phase") == "Failed"]
        failed = len(failed_pods)
        completions = int(spec.get("completions", 1) or 1)
        parallelism = int(spec.get("parallelism", 1) or 0)
        backoff_limit = int(spec.get("backoffLimit", 6))
        stamp = rfc3339(now)
        status = copy_obj(job.get("status") or {})
        status.setdefault("startTime", stamp)
        conditions = list(status.get("conditions") or [])
        if failed > backoff_limit:
            message = "Job has reached the specified backoff limit"
            for kind in ("FailureTarget", "Failed"):
                conditions = set_condition(
                    conditions, kind, "True", "BackoffLimitExceeded", message, now=stamp
                )
            for pod in active:
                try:
                    self.api.delete_object(rt_of("Pod"), namespace, pod["metadata"]["name"])
                except NotFound:
                    continue
            active = []
            self.api.events.record(
                involved=job,
                reason="BackoffLimitExceeded",
                type="Warning",
                message=message,
                component=COMPONENT,
            )
        elif succeeded >= completions:
            for kind in ("SuccessCriteriaMet", "Complete"):
                conditions = set_condition(conditions, kind, "True", "", "", now=stamp)
            status["completionTime"] = stamp
            self.api.events.record(
                involved=job, reason="Completed", message="Job completed", component=COMPONENT
            )
        elif not spec.get("suspend") and len(active) < min(parallelism, completions - succeeded):
            due = None
            if failed and not active:
                last = _last_failure(failed_pods) or now
                delay = min(BACKOFF_BASE * 2 ** (failed - 1), BACKOFF_MAX)
                due = last + delay
            if due is not None and now < due:
                self.queue.add_after(key, due)
            else:
                created = self._create(job, now)
                if created is not None:
                    active.append(created)
        status.update(
            active=len(active),
            ready=sum(1 for p in active if pod_ready(p)),
            succeeded=succeeded,
            failed=failed,
            terminating=0,
            uncountedTerminatedPods={},
        )
        if conditions:
            status["conditions"] = conditions
        for zero in ("active", "succeeded", "failed"):
            if not status[zero]:
                del status[zero]  # omitempty in the Go type
        write_status(self.api, "Job", job, status, manager=CONTROLLER_MANAGER)

    def _create(self, job: JsonObject, now: datetime) -> JsonObject | None:
        meta = job["metadata"]
        template = get_path(job, "spec", "template", default={})
        pod = pod_from_template(job, template, generate_name=f"{meta['name']}-")
        try:
            created, _ = self.api.create_object(
                rt_of("Pod"), meta["namespace"], pod, manager=CONTROLLER_MANAGER, internal=True
            )
        except ApiError as e:
            self.api.events.record(
                involved=job,
                reason="FailedCreate",
                type="Warning",
                message=f"Error creating: {e.message}",
                component=COMPONENT,
            )
            self.queue.add_after((meta["namespace"], meta["name"]), now + BACKOFF_BASE)
            return None
        self.api.events.record(
            involved=job,
            reason="SuccessfulCreate",
            message=f"Created pod: {created['metadata']['name']}",
            component=COMPONENT,
        )
        return created
