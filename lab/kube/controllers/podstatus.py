"""The kubelet model's per-container bookkeeping, and the pod status it reports.

Kept apart from the lifecycle logic so the status shape (everything the official client
requires: image, imageID, ready, restartCount, started, containerID, state and lastState;
phase and conditions; IPs and start time) lives in one readable place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from agents.model import JsonObject
from lab.kube.ids import digest
from lab.kube.jsonutil import get_path, rfc3339


def normalize_image(image: str) -> str:
    """`nginx:1.25` → `docker.io/library/nginx:1.25`, as the container runtime reports it."""
    name, tag_sep, tag = image.partition("@")
    if tag_sep:
        base, digest_part = name, "@" + tag
    else:
        last = image.rsplit("/", 1)[-1]
        base, digest_part = image, "" if ":" in last else ":latest"
    first = base.split("/", 1)[0]
    if "/" not in base or ("." not in first and ":" not in first and first != "localhost"):
        base = f"docker.io/{base}" if "/" in base else f"docker.io/library/{base}"
    return base + digest_part


def image_id(image: str) -> str:
    normalized = normalize_image(image)
    repository = normalized.split("@", 1)[0].rsplit(":", 1)[0]
    return f"{repository}@sha256:{digest(normalized)}"


@dataclass(slots=True)
class Container:
    name: str
    image: str
    init: bool
    state: str = "waiting"  # waiting, running, terminated
    reason: str = "ContainerCreating"
    message: str = ""
    container_id: str = ""
    started_at: datetime | None = None
    terminated: JsonObject | None = None  # the current terminated state
    finished_at: datetime | None = None
    last_terminated: JsonObject | None = None
    restart_count: int = 0
    runs: int = 0  # how many times it was started
    ready: bool = False
    ready_at: datetime | None = None
    next_attempt: datetime | None = None  # back-off expiry (pull or restart)
    backoff_s: float = 0.0
    pull_backoff_s: float = 0.0
    pulled: bool = False
    unhealthy_at: datetime | None = None

    def status(self) -> JsonObject:
        if self.state == "running":
            state: JsonObject = {"running": {"startedAt": rfc3339(self.started_at)}}  # type: ignore[arg-type]
        elif self.state == "terminated" and self.terminated is not None:
            state = {"terminated": dict(self.terminated)}
        else:
            waiting: JsonObject = {"reason": self.reason}
            if self.message:
                waiting["message"] = self.message
            state = {"waiting": waiting}
        out: JsonObject = {
            "name": self.name,
            "state": state,
            "lastState": {"terminated": dict(self.last_terminated)} if self.last_terminated else {},
            "ready": self.ready and self.state == "running",
            "restartCount": self.restart_count,
            "image": normalize_image(self.image),
            "imageID": image_id(self.image) if self.runs else "",
            "started": self.state == "running",
        }
        if self.container_id:
            out["containerID"] = self.container_id
        return out


@dataclass(slots=True)
class PodState:
    uid: str
    namespace: str
    name: str
    node: str
    ip: str
    started: datetime
    restart_policy: str
    init: list[Container] = field(default_factory=list)
    containers: list[Container] = field(default_factory=list)
    killed: bool = False

    def initialized(self) -> bool:
        return all(
            c.state == "terminated" and (c.terminated or {}).get("exitCode") == 0 for c in self.init
        )


def _conditions(
    state: PodState, old: list[JsonObject], now: str, *, node_ready: bool
) -> list[JsonObject]:
    unready = [c.name for c in state.containers if not (c.ready and c.state == "running")]
    initialized = state.initialized()
    wanted: dict[str, tuple[str, str, str]] = {
        "PodReadyToStartContainers": ("True", "", ""),
        "Initialized": ("True", "", "")
        if initialized
        else (
            "False",
            "ContainersNotInitialized",
            "containers with incomplete status: "
            f"[{' '.join(c.name for c in state.init if c.state != 'terminated')}]",
        ),
    }
    if not initialized:
        wanted["Ready"] = ("False", "ContainersNotInitialized", wanted["Initialized"][2])
        wanted["ContainersReady"] = wanted["Ready"]
    elif unready:
        message = f"containers with unready status: [{' '.join(unready)}]"
        wanted["Ready"] = ("False", "ContainersNotReady", message)
        wanted["ContainersReady"] = ("False", "ContainersNotReady", message)
    elif not node_ready:
        wanted["Ready"] = ("False", "NodeNotReady", "the node is not ready")
        wanted["ContainersReady"] = ("True", "", "")
    else:
        wanted["Ready"] = ("True", "", "")
        wanted["ContainersReady"] = ("True", "", "")
    previous = {c.get("type"): c for c in old}
    out: list[JsonObject] = []
    for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"):
        status, reason, message = wanted[kind]
        before = previous.get(kind)
        condition: JsonObject = {"type": kind, "status": status}
        if reason:
            condition["reason"] = reason
            condition["message"] = message
        if before is not None and before.get("status") == status:
            condition["lastTransitionTime"] = before.get("lastTransitionTime", now)
        else:
            condition["lastTransitionTime"] = now
        condition["lastProbeTime"] = None
        out.append(condition)
    scheduled = previous.get("PodScheduled")
    if scheduled is not None:
        out.append(dict(scheduled))
    for c in out:
        if c.get("lastProbeTime") is None:
            c.pop("lastProbeTime", None)
    return out


def _phase(state: PodState) -> str:
    if not state.initialized():
        failed = any(
            c.state == "terminated" and (c.terminated or {}).get("exitCode") for c in state.init
        )
        return "Failed" if failed and state.restart_policy == "Never" else "Pending"
    if any(c.runs == 0 for c in state.containers):
        return "Pending"
    if any(c.state == "running" for c in state.containers):
        return "Running"
    finished = all(c.state == "terminated" for c in state.containers)
    if not finished or state.restart_policy == "Always":
        return "Running"
    if all((c.terminated or {}).get("exitCode") == 0 for c in state.containers):
        return "Succeeded"
    if state.restart_policy == "Never":
        return "Failed"
    return "Running"


def pod_status(
    state: PodState, pod: JsonObject, now: datetime, *, node_ready: bool, host_ip: str
) -> JsonObject:
    old = pod.get("status") or {}
    stamp = rfc3339(now)
    status: JsonObject = {
        "phase": _phase(state),
        "conditions": _conditions(state, old.get("conditions") or [], stamp, node_ready=node_ready),
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": state.ip,
        "podIPs": [{"ip": state.ip}],
        "startTime": rfc3339(state.started),
        "containerStatuses": [c.status() for c in state.containers],
        "qosClass": old.get("qosClass", "BestEffort"),
    }
    if state.init:
        status["initContainerStatuses"] = [c.status() for c in state.init]
    if get_path(pod, "status", "nominatedNodeName"):
        status["nominatedNodeName"] = pod["status"]["nominatedNodeName"]
    return status
