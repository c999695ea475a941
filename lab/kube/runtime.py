"""The seams between the emulated cluster and the workload simulator.

The emulator (`lab.kube`) owns objects, API semantics and controllers. What a container
*does* once scheduled — whether its image exists, whether its command starts, whether it is
ready, how much memory it wants, what it logs — is asked of a `PodRuntime`, which the
workload simulator (`lab.sim`) implements from the app's behaviour model and the cluster's
actual state. The simulator reads that state through a `ClusterView`, and the fault library
writes through a `ClusterAPI` with the same semantics as the HTTP API (validation,
resourceVersion, generation, managedFields, events, dry run).

Kinds are named as in Kubernetes ("Pod", "Deployment", "ConfigMap"); objects are JSON dicts,
always returned as deep copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from agents.model import JsonObject

PatchType = Literal["strategic", "merge", "json"]


class ClusterView(Protocol):
    """Read access to the emulated cluster's objects, in-process."""

    def get(self, kind: str, namespace: str | None, name: str) -> JsonObject | None: ...

    def list(
        self, kind: str, namespace: str | None = None, label_selector: str = ""
    ) -> list[JsonObject]: ...


class ClusterAPI(ClusterView, Protocol):
    """In-process writes with exactly the HTTP API's semantics. Errors raise
    `lab.kube.errors.ApiError` subclasses carrying the HTTP status and a Status body."""

    def create(
        self, obj: JsonObject, *, field_manager: str, dry_run: bool = False
    ) -> JsonObject: ...

    def replace(
        self, obj: JsonObject, *, field_manager: str, dry_run: bool = False
    ) -> JsonObject: ...

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType,
        field_manager: str,
        dry_run: bool = False,
    ) -> JsonObject: ...

    def delete(
        self, kind: str, namespace: str | None, name: str, *, dry_run: bool = False
    ) -> JsonObject | None: ...

    def record_event(
        self,
        *,
        involved: JsonObject,
        reason: str,
        message: str,
        type: str = "Normal",
        component: str = "lab",
    ) -> None:
        """Emit (or bump the count of) an Event about `involved`."""
        ...


#: Registry host → (username, password): what the pod's imagePullSecrets hold, as the kubelet
#: hands them to the runtime (docker config `auths`).
Credentials = Mapping[str, tuple[str, str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class PullResult:
    ok: bool
    message: str = ""  # on failure: the registry's error text, shown in ErrImagePull events


@dataclass(frozen=True, slots=True, kw_only=True)
class StartResult:
    """What happened when the kubelet model started a container."""

    running: bool
    exit_code: int = 0
    reason: str = ""  # "Error", "ContainerCannotRun", ...
    message: str = ""
    log_lines: tuple[str, ...] = ()  # written to the container log at start (or before exit)


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerHealth:
    """The runtime's verdict on a running container at one instant."""

    ready: bool
    memory_bytes: int = 0  # working set; above the memory limit the kubelet OOM-kills it
    cpu_millis: int = 0
    crashed: bool = False  # the process exited by itself since the last check
    exit_code: int = 0
    crash_message: str = ""
    new_log_lines: tuple[str, ...] = field(default=())


class PodRuntime(Protocol):
    """What the kubelet model asks about containers. Implemented by the workload simulator;
    `lab.kube` ships a minimal default for running the emulator on its own."""

    def pull(self, image: str, credentials: Credentials | None = None) -> PullResult: ...

    def start(self, pod: JsonObject, container: JsonObject, now: datetime) -> StartResult: ...

    def health(self, pod: JsonObject, container: JsonObject, now: datetime) -> ContainerHealth: ...
