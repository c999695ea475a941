"""A minimal `PodRuntime` so the emulator runs on its own: a small image registry.

Each image names the binaries it contains, the memory it uses, whether its process crashes
at start or stays unready, and what it logs. Unknown repositories or tags fail to pull with
the registry's "not found" error; a command whose executable is not in the image fails to
start as containerd reports it. The workload simulator replaces this with a behaviour model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from agents.model import JsonObject
from lab.kube.controllers.podstatus import normalize_image
from lab.kube.runtime import ContainerHealth, Credentials, PullResult, StartResult

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSpec:
    #: Tags that exist; None accepts any tag.
    tags: frozenset[str] | None = None
    binaries: frozenset[str] = frozenset({"sh", "/bin/sh"})
    memory_bytes: int = 20 * MIB
    crashes: bool = False
    exit_code: int = 1
    ready: bool = True
    log_lines: tuple[str, ...] = ()
    crash_lines: tuple[str, ...] = ()


_SHELL = frozenset({"sh", "/bin/sh", "bash", "/bin/bash", "sleep", "echo", "cat", "env"})

DEFAULT_IMAGES: Mapping[str, ImageSpec] = {
    "nginx": ImageSpec(
        tags=frozenset(
            {"latest", "stable", "alpine", "1.25", "1.26", "1.27", "1.25-alpine", "1.27-alpine"}
        ),
        binaries=_SHELL | {"nginx", "/usr/sbin/nginx", "/docker-entrypoint.sh"},
        memory_bytes=8 * MIB,
        log_lines=(
            "/docker-entrypoint.sh: Configuration complete; ready for start up",
            "nginx: [notice] start worker processes",
        ),
    ),
    "busybox": ImageSpec(binaries=_SHELL | {"busybox", "wget", "nc"}, memory_bytes=1 * MIB),
    "redis": ImageSpec(
        binaries=_SHELL | {"redis-server", "redis-cli"},
        memory_bytes=12 * MIB,
        log_lines=("* Ready to accept connections tcp",),
    ),
    "registry.k8s.io/pause": ImageSpec(binaries=frozenset({"/pause"}), memory_bytes=1 * MIB),
    "lab/app": ImageSpec(
        binaries=_SHELL | {"app", "/app"},
        memory_bytes=64 * MIB,
        log_lines=("starting lab app", "listening on :8080"),
    ),
    "lab/crashloop": ImageSpec(
        binaries=_SHELL | {"app", "/app"},
        crashes=True,
        exit_code=1,
        log_lines=("starting lab app",),
        crash_lines=("panic: cannot connect to database: connection refused",),
    ),
    "lab/oom": ImageSpec(
        binaries=_SHELL | {"app", "/app"},
        memory_bytes=512 * MIB,
        log_lines=("starting lab app", "loading cache into memory"),
    ),
    "lab/unready": ImageSpec(
        binaries=_SHELL | {"app", "/app"},
        ready=False,
        log_lines=("starting lab app",),
    ),
}


def _split(image: str) -> tuple[str, str]:
    """(repository as written without registry defaults, tag)."""
    if "@" in image:
        return image.split("@", 1)[0], "digest"
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = image.rsplit(":", 1)
        return repository, tag
    return image, "latest"


@dataclass(slots=True)
class StaticRuntime:
    images: Mapping[str, ImageSpec] = field(default_factory=lambda: dict(DEFAULT_IMAGES))

    def _lookup(self, image: str) -> ImageSpec | None:
        repository, tag = _split(image)
        for name in (
            repository,
            repository.removeprefix("docker.io/library/"),
            repository.removeprefix("docker.io/"),
        ):
            spec = self.images.get(name)
            if spec is not None:
                if spec.tags is not None and tag not in spec.tags and tag != "digest":
                    return None
                return spec
        return None

    def pull(self, image: str, credentials: Credentials | None = None) -> PullResult:
        if self._lookup(image) is not None:
            return PullResult(ok=True)
        ref = normalize_image(image)
        return PullResult(
            ok=False,
            message=f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
            f'failed to resolve reference "{ref}": {ref}: not found',
        )

    def start(self, pod: JsonObject, container: JsonObject, now: datetime) -> StartResult:
        spec = self._lookup(str(container.get("image", "")))
        if spec is None:
            return StartResult(
                running=False, exit_code=128, reason="StartError", message="image is not available"
            )
        command = list(container.get("command") or [])
        if command and command[0] not in spec.binaries:
            return StartResult(
                running=False,
                exit_code=128,
                reason="StartError",
                message="failed to create containerd task: failed to create shim task: OCI "
                "runtime create failed: runc create failed: unable to start container process: "
                f'exec: "{command[0]}": executable file not found in $PATH: unknown',
            )
        if spec.crashes:
            return StartResult(
                running=False,
                exit_code=spec.exit_code,
                reason="Error",
                log_lines=spec.log_lines + spec.crash_lines,
            )
        return StartResult(running=True, log_lines=spec.log_lines)

    def health(self, pod: JsonObject, container: JsonObject, now: datetime) -> ContainerHealth:
        spec = self._lookup(str(container.get("image", "")))
        if spec is None:
            return ContainerHealth(ready=False, crashed=True, exit_code=1)
        return ContainerHealth(ready=spec.ready, memory_bytes=spec.memory_bytes)
