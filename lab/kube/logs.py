"""Container logs: what `kubectl logs` and the `pods/log` subresource serve.

The kubelet model appends the lines a container writes (from the `PodRuntime`); when a
container restarts, its log becomes the "previous" log (`--previous`), as the real kubelet
keeps the last terminated instance. Errors use the real server's wording, which people (and
Stratus's diagnosis) recognise.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agents.model import JsonObject
from lab.kube.errors import BadRequest, not_found
from lab.kube.jsonutil import get_path

if TYPE_CHECKING:
    from lab.kube.api import KubeApi


#: Lines kept per container instance (older ones are dropped, like log rotation).
MAX_LINES = 5_000


@dataclass(slots=True)
class _Instance:
    lines: list[tuple[datetime, str]] = field(default_factory=list)


@dataclass(slots=True)
class _Container:
    current: _Instance = field(default_factory=_Instance)
    previous: _Instance | None = None


class LogStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: dict[tuple[str, str], _Container] = {}

    def append(self, pod_uid: str, container: str, lines: Iterable[str], now: datetime) -> None:
        with self._lock:
            log = self._logs.setdefault((pod_uid, container), _Container())
            for line in lines:
                log.current.lines.append((now, line))
            if len(log.current.lines) > MAX_LINES:
                del log.current.lines[: len(log.current.lines) - MAX_LINES]

    def new_instance(self, pod_uid: str, container: str) -> None:
        """A container (re)started: its last log becomes the previous one."""
        with self._lock:
            log = self._logs.setdefault((pod_uid, container), _Container())
            if log.current.lines or log.previous is not None:
                log.previous = log.current
            log.current = _Instance()

    def has_previous(self, pod_uid: str, container: str) -> bool:
        with self._lock:
            log = self._logs.get((pod_uid, container))
            return log is not None and log.previous is not None

    def lines(self, pod_uid: str, container: str, *, previous: bool) -> list[tuple[datetime, str]]:
        with self._lock:
            log = self._logs.get((pod_uid, container))
            if log is None:
                return []
            instance = log.previous if previous else log.current
            return list(instance.lines) if instance is not None else []

    def drop(self, pod_uid: str) -> None:
        with self._lock:
            for key in [k for k in self._logs if k[0] == pod_uid]:
                del self._logs[key]


@dataclass(frozen=True, slots=True, kw_only=True)
class LogQuery:
    container: str = ""
    previous: bool = False
    tail_lines: int | None = None
    since_seconds: int | None = None
    timestamps: bool = False
    limit_bytes: int | None = None


def _status_of(pod: JsonObject, container: str) -> JsonObject:
    for group in ("containerStatuses", "initContainerStatuses"):
        for status in get_path(pod, "status", group, default=[]):
            if status.get("name") == container:
                return dict(status)
    return {}


def pod_log(api: KubeApi, logs: LogStore, namespace: str, name: str, query: LogQuery) -> str:
    stored = api.store.get("Pod", namespace, name)
    if stored is None:
        raise not_found("pods", "", name)
    pod = stored.obj
    containers = [c.get("name", "") for c in get_path(pod, "spec", "containers", default=[])]
    init = [c.get("name", "") for c in get_path(pod, "spec", "initContainers", default=[])]
    container = query.container
    if not container:
        if len(containers) != 1:
            message = (
                f"a container name must be specified for pod {name}, choose one of: "
                f"[{' '.join(containers)}]"
            )
            if init:
                message += f" or one of the init containers: [{' '.join(init)}]"
            raise BadRequest(message)
        container = containers[0]
    if container not in containers and container not in init:
        raise BadRequest(f"container {container} is not valid for pod {name}")
    uid = pod["metadata"]["uid"]
    if query.previous:
        if not logs.has_previous(uid, container):
            raise BadRequest(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
    else:
        status = _status_of(pod, container)
        waiting = get_path(status, "state", "waiting")
        started = status.get("restartCount", 0) > 0 or get_path(status, "lastState", "terminated")
        if not status or (waiting is not None and not started):
            reason = (waiting or {}).get("reason", "ContainerCreating")
            if reason in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName"):
                detail = "trying and failing to pull image"
            else:
                detail = reason
            raise BadRequest(
                f'container "{container}" in pod "{name}" is waiting to start: {detail}'
            )
    lines = logs.lines(uid, container, previous=query.previous)
    if query.since_seconds is not None:
        cutoff = api.clock.now() - timedelta(seconds=query.since_seconds)
        lines = [(t, line) for t, line in lines if t >= cutoff]
    if query.tail_lines is not None:
        lines = lines[-query.tail_lines :] if query.tail_lines > 0 else []
    if query.timestamps:
        text = "".join(f"{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}000Z {line}\n" for t, line in lines)
    else:
        text = "".join(f"{line}\n" for _, line in lines)
    if query.limit_bytes is not None:
        text = text.encode()[: query.limit_bytes].decode(errors="ignore")
    return text
