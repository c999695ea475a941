"""The kubelet model: run the containers of bound pods through a `PodRuntime`.

Per container, as the real kubelet: pull the image (a failure is ErrImagePull, then
ImagePullBackOff with Failed/BackOff events, retried with back-off), create and start it
(Created/Started; a start that fails or a process that exits is terminated, recorded in
lastState, and restarted per restartPolicy with CrashLoopBackOff back-off of 10 s doubling
to 300 s, all in lab time), then check it every tick: readiness, memory against its limit
(OOMKilled, exit 137), and crashes. Logs go to the `LogStore`; `--previous` serves the
instance before a restart. Deleted pods get Killing events and are removed.
"""

from __future__ import annotations

import base64
import contextlib
import heapq
import json
import logging
import threading
from datetime import datetime, timedelta

from agents.model import JsonObject
from lab.kube import quantity
from lab.kube.api import KubeApi
from lab.kube.controllers.base import condition, rt_of, write_status
from lab.kube.controllers.podstatus import Container, PodState, normalize_image, pod_status
from lab.kube.errors import NotFound
from lab.kube.ids import Ids, PodAddresses
from lab.kube.jsonutil import get_path, rfc3339
from lab.kube.logs import LogStore
from lab.kube.runtime import PodRuntime
from lab.kube.store import Change

logger = logging.getLogger(__name__)


MANAGER = "kubelet"
COMPONENT = "kubelet"
BACKOFF_START_S = 10.0
BACKOFF_MAX_S = 300.0
#: A container that ran this long resets its back-off, as the real kubelet's does.
BACKOFF_RESET_S = 600.0
OOM_EXIT = 137
#: Start failures found before the container exists: it stays waiting with this reason.
CONFIG_ERRORS = frozenset({"CreateContainerConfigError", "CreateContainerError"})


class Kubelet:
    name = "kubelet"

    def __init__(
        self,
        api: KubeApi,
        runtime: PodRuntime,
        logs: LogStore,
        ids: Ids,
        addresses: PodAddresses,
        *,
        period_s: float = 1.0,
    ) -> None:
        self.api = api
        self.runtime = runtime
        self.logs = logs
        self.ids = ids
        self.addresses = addresses
        self.period = timedelta(seconds=period_s)
        self._pods: dict[str, PodState] = {}
        self._due: list[tuple[float, int, str, str, str]] = []
        self._sequence = 0
        # Fed by store changes on whichever thread writes; drained by the reconciling thread.
        self._pending: dict[tuple[str, str], None] = {}
        self._pending_lock = threading.Lock()
        self._images: dict[str, set[str]] = {}  # node → pulled images

    # ------------------------------------------------------------------ scheduling

    def on_change(self, change: Change) -> None:
        if change.kind == "Node" and change.type != "DELETED":
            # A node back from NotReady finishes the pods deleted while it was away, and
            # reports the others again (Ready once more); one going NotReady marks them.
            ready_changed = change.old is not None and condition(change.old, "Ready") != condition(
                change.obj, "Ready"
            )
            for pod in self.api.store.iter_objects("Pod"):
                if get_path(pod, "spec", "nodeName") == change.name and (
                    ready_changed or get_path(pod, "metadata", "deletionTimestamp")
                ):
                    with self._pending_lock:
                        self._pending[(pod["metadata"]["namespace"], pod["metadata"]["name"])] = (
                            None
                        )
            return
        if change.kind != "Pod":
            return
        if change.type == "DELETED":
            state = self._pods.pop(get_path(change.obj, "metadata", "uid", default=""), None)
            if state is not None:
                self.addresses.release(state.node, state.ip)
                self.logs.drop(state.uid)
            return
        if get_path(change.obj, "spec", "nodeName"):
            uid = change.obj["metadata"]["uid"]
            if uid not in self._pods or get_path(change.obj, "metadata", "deletionTimestamp"):
                with self._pending_lock:
                    self._pending[(change.namespace, change.name)] = None

    def _schedule(self, state: PodState, when: datetime) -> None:
        self._sequence += 1
        heapq.heappush(
            self._due, (when.timestamp(), self._sequence, state.uid, state.namespace, state.name)
        )

    def sync(self, now: datetime) -> bool:
        with self._pending_lock:
            keys = dict(self._pending)
            self._pending.clear()
        stamp = now.timestamp() + 1e-9
        while self._due and self._due[0][0] <= stamp:
            _, _, uid, namespace, name = heapq.heappop(self._due)
            if uid in self._pods:
                keys[(namespace, name)] = None
        for key in sorted(keys):
            try:
                self._visit(key, now)
            except Exception:  # an outer boundary: one pod must not stop the node
                logger.exception("kubelet: pod %s/%s failed", *key)
        return bool(keys)

    # ------------------------------------------------------------------ lifecycle

    def _visit(self, key: tuple[str, str], now: datetime) -> None:
        stored = self.api.store.get("Pod", *key)
        if stored is None:
            return
        pod = stored.obj
        node_name = get_path(pod, "spec", "nodeName")
        node = self.api.store.get("Node", "", node_name) if node_name else None
        if node is None:
            return
        uid = pod["metadata"]["uid"]
        state = self._pods.get(uid)
        ready_condition = condition(node.obj, "Ready")
        node_ready = ready_condition is not None and ready_condition.get("status") == "True"
        if get_path(pod, "metadata", "deletionTimestamp"):
            if node_ready:  # a dead node's kubelet cannot finish its pods: they stay Terminating
                self._kill(pod, state)
            return
        if state is None:
            state = self._admit(pod, node_name, now)
        if get_path(pod, "status", "phase") in ("Succeeded", "Failed") and state.killed:
            return
        if node_ready:
            self._run(pod, state, now)
        host_ip = next(
            (
                a.get("address", "")
                for a in get_path(node.obj, "status", "addresses", default=[])
                if a.get("type") == "InternalIP"
            ),
            "",
        )
        status = pod_status(state, pod, now, node_ready=node_ready, host_ip=host_ip)
        write_status(self.api, "Pod", pod, status, manager=MANAGER)
        if status["phase"] in ("Succeeded", "Failed"):
            state.killed = True
            return
        self._schedule(state, self._next_visit(state, now))

    def _next_visit(self, state: PodState, now: datetime) -> datetime:
        due = now + self.period
        for container in [*state.init, *state.containers]:
            if container.next_attempt is not None and now < container.next_attempt < due:
                due = container.next_attempt
        return due

    def _admit(self, pod: JsonObject, node: str, now: datetime) -> PodState:
        spec = pod.get("spec") or {}
        node_obj = self.api.store.get("Node", "", node)
        cidr = get_path(node_obj.obj if node_obj else {}, "spec", "podCIDR", default="")
        if cidr:
            self.addresses.add_node(node, cidr)
        state = PodState(
            uid=pod["metadata"]["uid"],
            namespace=pod["metadata"]["namespace"],
            name=pod["metadata"]["name"],
            node=node,
            ip=self.addresses.allocate(node) if cidr else "10.244.0.2",
            started=now,
            restart_policy=spec.get("restartPolicy", "Always"),
            init=[
                Container(c.get("name", ""), c.get("image", ""), True, reason="PodInitializing")
                for c in spec.get("initContainers") or []
            ],
            containers=[
                Container(
                    c.get("name", ""),
                    c.get("image", ""),
                    False,
                    reason="PodInitializing" if spec.get("initContainers") else "ContainerCreating",
                )
                for c in spec.get("containers") or []
            ],
        )
        self._pods[state.uid] = state
        return state

    def _kill(self, pod: JsonObject, state: PodState | None) -> None:
        if state is not None:
            for container in state.containers:
                if container.state == "running":
                    self._event(pod, container, "Killing", f"Stopping container {container.name}")
        with contextlib.suppress(NotFound):
            self.api.delete_object(
                rt_of("Pod"), pod["metadata"]["namespace"], pod["metadata"]["name"], grace_period=0
            )

    def _spec_of(self, pod: JsonObject, container: Container) -> JsonObject:
        group = "initContainers" if container.init else "containers"
        for spec in get_path(pod, "spec", group, default=[]):
            if spec.get("name") == container.name:
                return dict(spec)
        return {"name": container.name, "image": container.image}

    def _run(self, pod: JsonObject, state: PodState, now: datetime) -> None:
        for container in state.init:
            if (
                container.state == "terminated"
                and (container.terminated or {}).get("exitCode") == 0
            ):
                continue
            self._step(pod, state, container, now)
            if not (
                container.state == "terminated"
                and (container.terminated or {}).get("exitCode") == 0
            ):
                return
        for container in state.containers:
            self._redefine(pod, container, now)
            self._step(pod, state, container, now)

    def _redefine(self, pod: JsonObject, container: Container, now: datetime) -> None:
        """A pod update changed the container's image: kill it and start the new one now."""
        image = self._spec_of(pod, container).get("image", container.image)
        if image == container.image:
            return
        if container.state == "running":
            self._event(
                pod,
                container,
                "Killing",
                f"Container {container.name} definition changed, will be restarted",
            )
            self._terminate(container, 0, "Completed", "", now, started=container.started_at)
        if container.state == "terminated":
            container.last_terminated = container.terminated
            container.terminated = None
        container.image = image
        container.state, container.reason, container.message = "waiting", "ContainerCreating", ""
        container.pulled = False
        container.next_attempt = None
        container.backoff_s = container.pull_backoff_s = 0.0

    def _step(self, pod: JsonObject, state: PodState, container: Container, now: datetime) -> None:
        spec = self._spec_of(pod, container)
        if container.state == "running":
            self._check(pod, state, container, spec, now)
            return
        if container.state == "terminated":
            if not self._should_restart(state, container):
                return
            self._enter_backoff(pod, state, container, now)
        if container.next_attempt is not None and now < container.next_attempt:
            self._show_backoff(pod, state, container)
            return
        if not self._pull(pod, state, container, spec, now):
            return
        self._start(pod, state, container, spec, now)

    # ------------------------------------------------------------------ image pulls

    def _pull(
        self,
        pod: JsonObject,
        state: PodState,
        container: Container,
        spec: JsonObject,
        now: datetime,
    ) -> bool:
        image = container.image
        policy = spec.get("imagePullPolicy", "IfNotPresent")
        present = image in self._images.get(state.node, set())
        if policy == "Never" and not present:
            container.state, container.reason = "waiting", "ErrImageNeverPull"
            container.message = (
                f'Container image "{image}" is not present with pull policy of Never'
            )
            self._event(pod, container, "ErrImageNeverPull", container.message, warning=True)
            return False
        if present and policy != "Always":
            if not container.pulled:
                self._event(
                    pod,
                    container,
                    "Pulled",
                    f'Container image "{image}" already present on machine',
                )
            container.pulled = True
            return True
        self._event(pod, container, "Pulling", f'Pulling image "{image}"')
        result = self.runtime.pull(image, self._pull_credentials(pod, container))
        if not result.ok:
            container.state, container.reason = "waiting", "ErrImagePull"
            container.message = result.message or f'failed to pull image "{image}"'
            self._event(
                pod,
                container,
                "Failed",
                f'Failed to pull image "{image}": {container.message}',
                warning=True,
            )
            self._event(pod, container, "Failed", "Error: ErrImagePull", warning=True)
            container.pull_backoff_s = min(
                max(container.pull_backoff_s * 2, BACKOFF_START_S), BACKOFF_MAX_S
            )
            container.next_attempt = now + timedelta(seconds=container.pull_backoff_s)
            return False
        container.pulled = True
        container.pull_backoff_s = 0.0
        self._images.setdefault(state.node, set()).add(image)
        size = 10_000_000 + int.from_bytes(image.encode()[:3].ljust(3, b"\0"), "big") % 90_000_000
        self._event(
            pod,
            container,
            "Pulled",
            f'Successfully pulled image "{image}" in 1.2s (1.2s including waiting). '
            f"Image size: {size} bytes.",
        )
        return True

    def _pull_credentials(
        self, pod: JsonObject, container: Container
    ) -> dict[str, tuple[str, str]]:
        """The registry accounts in the pod's imagePullSecrets, as the kubelet's keyring reads
        them; a Secret that does not exist is skipped with the kubelet's warning."""
        namespace = pod["metadata"]["namespace"]
        out: dict[str, tuple[str, str]] = {}
        missing: list[str] = []
        for ref in get_path(pod, "spec", "imagePullSecrets", default=[]) or []:
            name = str(ref.get("name", ""))
            stored = self.api.store.get("Secret", namespace, name)
            if stored is None:
                missing.append(name)
                continue
            out.update(docker_auths(stored.obj))
        if missing:
            self._event(
                pod,
                container,
                "FailedToRetrieveImagePullSecret",
                f"Unable to retrieve some image pull secrets ({', '.join(missing)}); attempting "
                "to pull the image may not succeed.",
                warning=True,
            )
        return out

    def _show_backoff(self, pod: JsonObject, state: PodState, container: Container) -> None:
        """While waiting out a back-off, say so (once per back-off period)."""
        if container.reason == "ErrImagePull":
            container.reason = "ImagePullBackOff"
            container.message = f'Back-off pulling image "{container.image}"'
            self._event(pod, container, "BackOff", container.message)
            self._event(pod, container, "Failed", "Error: ImagePullBackOff", warning=True)

    # ------------------------------------------------------------------ start / check

    def _start(
        self,
        pod: JsonObject,
        state: PodState,
        container: Container,
        spec: JsonObject,
        now: datetime,
    ) -> None:
        result = self.runtime.start(pod, spec, now)
        if not result.running and result.reason in CONFIG_ERRORS:
            # The kubelet could not build the container's config (a missing ConfigMap key,
            # Secret...): nothing was created, so no restart is counted and no log written;
            # the pod worker retries every 10 s (its fixed error back-off) until it resolves.
            container.state, container.reason = "waiting", result.reason
            container.message = result.message
            self._event(pod, container, "Failed", f"Error: {result.message}", warning=True)
            container.next_attempt = now + timedelta(seconds=BACKOFF_START_S)
            return
        if container.runs:
            container.restart_count += 1
        container.runs += 1
        container.next_attempt = None
        container.container_id = f"containerd://{self.ids.hex(64)}"
        self.logs.new_instance(state.uid, container.name)
        self.logs.append(state.uid, container.name, result.log_lines, now)
        self._event(pod, container, "Created", f"Created container: {container.name}")
        if not result.running and result.reason in ("StartError", "ContainerCannotRun"):
            self._event(pod, container, "Failed", f"Error: {result.message}", warning=True)
            self._terminate(
                container, result.exit_code or 128, result.reason, result.message, now, started=now
            )
            return
        self._event(pod, container, "Started", f"Started container: {container.name}")
        container.started_at = now
        if not result.running or container.init:
            code = result.exit_code if not result.running else 0
            reason = result.reason or ("Completed" if code == 0 else "Error")
            self._terminate(container, code, reason, result.message, now, started=now)
            return
        container.state = "running"
        container.reason = container.message = ""
        container.ready = False
        self._check(pod, state, container, spec, now)

    def _check(
        self,
        pod: JsonObject,
        state: PodState,
        container: Container,
        spec: JsonObject,
        now: datetime,
    ) -> None:
        health = self.runtime.health(pod, spec, now)
        if health.new_log_lines:
            self.logs.append(state.uid, container.name, health.new_log_lines, now)
        limit = quantity.value(get_path(spec, "resources", "limits", "memory"))
        if limit and health.memory_bytes > limit:
            self._terminate(container, OOM_EXIT, "OOMKilled", "", now, started=container.started_at)
            return
        if health.crashed:
            code = health.exit_code
            self._terminate(
                container,
                code,
                "Completed" if code == 0 else "Error",
                health.crash_message,
                now,
                started=container.started_at,
            )
            return
        probe = spec.get("readinessProbe")
        ready = health.ready
        if ready and probe and container.started_at is not None:
            delay = int(probe.get("initialDelaySeconds", 0) or 0)
            if (now - container.started_at).total_seconds() < delay:
                ready = False
        if not health.ready and probe:
            period = int(probe.get("periodSeconds", 10) or 10)
            if (
                container.unhealthy_at is None
                or (now - container.unhealthy_at).total_seconds() >= period
            ):
                container.unhealthy_at = now
                self._event(
                    pod, container, "Unhealthy", _probe_failure(probe, spec, state.ip), warning=True
                )
        container.ready = ready
        started = container.started_at
        if started is not None and (now - started).total_seconds() >= BACKOFF_RESET_S:
            container.backoff_s = 0.0

    def _terminate(
        self,
        container: Container,
        code: int,
        reason: str,
        message: str,
        now: datetime,
        *,
        started: datetime | None,
    ) -> None:
        terminated: JsonObject = {
            "exitCode": code,
            "reason": reason,
            "startedAt": rfc3339(started or now),
            "finishedAt": rfc3339(now),
            "containerID": container.container_id,
        }
        if message:
            terminated["message"] = message
        container.state = "terminated"
        container.terminated = terminated
        container.finished_at = now
        container.ready = False

    def _should_restart(self, state: PodState, container: Container) -> bool:
        code = (container.terminated or {}).get("exitCode", 0)
        if container.init:
            return code != 0 and state.restart_policy != "Never"
        if state.restart_policy == "Always":
            return True
        return state.restart_policy == "OnFailure" and code != 0

    def _enter_backoff(
        self, pod: JsonObject, state: PodState, container: Container, now: datetime
    ) -> None:
        container.last_terminated = container.terminated
        container.terminated = None
        delay = container.backoff_s
        container.backoff_s = min(max(delay * 2, BACKOFF_START_S), BACKOFF_MAX_S)
        container.state = "waiting"
        # Measured from when the container finished, as the kubelet's back-off is.
        due = (container.finished_at or now) + timedelta(seconds=delay)
        if delay <= 0 or due <= now:
            container.next_attempt = None
            return
        container.next_attempt = due
        container.reason = "CrashLoopBackOff"
        meta = pod["metadata"]
        container.message = (
            f"back-off {int(delay)}s restarting failed container="
            f"{container.name} pod={meta['name']}_{meta['namespace']}"
            f"({meta['uid']})"
        )
        self._event(
            pod,
            container,
            "BackOff",
            f"Back-off restarting failed container {container.name} in pod "
            f"{meta['name']}_{meta['namespace']}({meta['uid']})",
            warning=True,
        )

    def _event(
        self,
        pod: JsonObject,
        container: Container,
        reason: str,
        message: str,
        *,
        warning: bool = False,
    ) -> None:
        group = "initContainers" if container.init else "containers"
        self.api.events.record(
            involved=pod,
            reason=reason,
            message=message,
            type="Warning" if warning else "Normal",
            component=COMPONENT,
            field_path=f"spec.{group}{{{container.name}}}",
        )


def docker_auths(secret: JsonObject) -> dict[str, tuple[str, str]]:
    """Registry → (username, password) from a kubernetes.io/dockerconfigjson (or legacy
    dockercfg) Secret; entries give `username`/`password` or `auth` (base64 "user:pass")."""
    data = secret.get("data") or {}
    try:
        if ".dockerconfigjson" in data:
            auths = json.loads(base64.b64decode(data[".dockerconfigjson"])).get("auths") or {}
        elif ".dockercfg" in data:
            auths = json.loads(base64.b64decode(data[".dockercfg"]))
        else:
            return {}
    except (ValueError, TypeError, AttributeError):
        return {}  # the kubelet ignores a malformed config and pulls anonymously
    out: dict[str, tuple[str, str]] = {}
    for host, entry in auths.items() if isinstance(auths, dict) else ():
        if not isinstance(entry, dict):
            continue
        user, password = entry.get("username"), entry.get("password")
        if (user is None or password is None) and entry.get("auth"):
            try:
                user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                continue
        if user is not None and password is not None:
            key = str(host).removeprefix("https://").removeprefix("http://").rstrip("/")
            if key.startswith("index.docker.io") or key == "docker.io":
                key = "https://index.docker.io/v1/"
            out[key] = (str(user), str(password))
    return out


def _probe_failure(probe: JsonObject, container: JsonObject, ip: str) -> str:
    """The kubelet's Unhealthy message. A simulated process is unready only while nothing
    listens where the probe looks (still starting, or the probe aims at another port), so the
    dial is refused, in the prober's words for each handler."""
    for kind in ("httpGet", "tcpSocket"):
        handler = probe.get(kind)
        if not isinstance(handler, dict):
            continue
        port = handler.get("port", "")
        if isinstance(port, str) and not port.isdigit():  # a named port: the declared number
            port = next(
                (
                    p.get("containerPort")
                    for p in container.get("ports") or []
                    if p.get("name") == port
                ),
                port,
            )
        refused = f"dial tcp {ip}:{port}: connect: connection refused"
        if kind == "httpGet":
            scheme = str(handler.get("scheme", "HTTP")).lower()
            path = str(handler.get("path", "/"))
            return f'Readiness probe failed: Get "{scheme}://{ip}:{port}{path}": {refused}'
        return f"Readiness probe failed: {refused}"
    return "Readiness probe failed: "


__all__ = ["Kubelet", "normalize_image"]
