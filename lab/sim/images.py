"""The simulated container registry: which image references exist and what is inside them.

A pull of a reference nobody pushed fails with containerd's own words, and a container whose
`command` names a file its image lacks fails to start the way runc says so. Both follow from
the registry's contents and the Pod spec, never from knowing that a fault was injected: the
fault library changes an image or a command, and the kubelet model asks us what happens.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lab.sim.model import AppModel

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSpec:
    binaries: frozenset[str]
    entrypoint: tuple[str, ...] = ()
    path: tuple[str, ...] = ("/usr/local/bin", "/usr/bin", "/bin")
    panic: str | None = None  # a bad build: panics at start with this line
    leak_mib_per_min: float = 0.0  # a bad build: its heap grows this much per minute of uptime


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageRef:
    repository: str
    tag: str

    def __str__(self) -> str:
        return f"{self.repository}:{self.tag}"


def parse_image(image: str) -> ImageRef:
    """Split `repo[:tag][@digest]`; a missing tag means `latest`, as every runtime reads it."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return ImageRef(
            repository=name[:colon], tag=name[colon + 1 :] + (f"@{digest}" if digest else "")
        )
    return ImageRef(repository=name, tag=f"@{digest}" if digest else "latest")


def _canonical(image: str) -> str:
    ref = parse_image(image)
    repo = ref.repository
    for prefix in ("docker.io/library/", "docker.io/"):
        if repo.startswith(prefix):
            repo = repo[len(prefix) :]
    return f"{repo}:{ref.tag}"


def _qualified(repository: str) -> str:
    """Docker Hub names as containerd spells them: `mongo` → `docker.io/library/mongo`."""
    first = repository.split("/", 1)[0]
    if "." in first or ":" in first or first == "localhost":
        return repository
    return f"docker.io/{repository}" if "/" in repository else f"docker.io/library/{repository}"


def registry_host(image: str) -> str:
    """The registry a reference is pulled from, as docker config `auths` keys it."""
    first = _qualified(parse_image(image).repository).split("/", 1)[0]
    return "https://index.docker.io/v1/" if first == "docker.io" else first


class ImageRegistry:
    """Thread-safe: the fault library may push a bad build while the lab runs.

    A private repository (`protect`) answers pulls without its account's credentials with
    401 Unauthorized, whether or not the tag exists, as a registry with basic auth does."""

    def __init__(self) -> None:
        self._images: dict[str, ImageSpec] = {}
        self._private: dict[str, tuple[str, str]] = {}  # repository → (username, password)
        self._lock = threading.Lock()

    @classmethod
    def from_models(cls, models: Iterable[AppModel]) -> ImageRegistry:
        registry = cls()
        for model in models:
            for image in model.images:
                if image.auth is not None:
                    registry.protect(image.repository, image.auth.username, image.auth.password)
                for tag, spec in image.tags.items():
                    registry.push(
                        f"{image.repository}:{tag}",
                        ImageSpec(
                            binaries=frozenset(spec.binaries),
                            entrypoint=spec.entrypoint,
                            path=spec.path,
                            panic=spec.panic,
                            leak_mib_per_min=spec.leak_mib_per_min,
                        ),
                    )
        return registry

    def push(self, image: str, spec: ImageSpec) -> None:
        with self._lock:
            self._images[_canonical(image)] = spec

    def remove(self, image: str) -> None:
        with self._lock:
            self._images.pop(_canonical(image), None)

    def get(self, image: str) -> ImageSpec | None:
        with self._lock:
            return self._images.get(_canonical(image))

    def protect(self, repository: str, username: str, password: str) -> None:
        with self._lock:
            self._private[_canonical(f"{repository}:x").rsplit(":", 1)[0]] = (username, password)

    def account(self, image: str) -> tuple[str, str] | None:
        """The credentials a pull of this reference needs (None: a public repository)."""
        with self._lock:
            return self._private.get(_canonical(image).rsplit(":", 1)[0])

    def pull_error(
        self, image: str, credentials: Mapping[str, tuple[str, str]] | None = None
    ) -> str | None:
        """None when the image can be pulled, else the message containerd gives the kubelet."""
        ref = parse_image(image)
        full = f"{_qualified(ref.repository)}:{ref.tag}"
        account = self.account(image)
        if account is not None and (credentials or {}).get(registry_host(image)) != account:
            host, _, path = _qualified(ref.repository).partition("/")
            return (
                f'rpc error: code = Unknown desc = failed to pull and unpack image "{full}": '
                f'failed to resolve reference "{full}": unexpected status from HEAD request to '
                f"https://{host}/v2/{path}/manifests/{ref.tag}: 401 Unauthorized"
            )
        if self.get(image) is not None:
            return None
        return (
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{full}": '
            f'failed to resolve reference "{full}": {full}: not found'
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecResult:
    binary: str | None  # the absolute path that runs, or None when exec fails
    args: tuple[str, ...]
    error: str = ""


def resolve_exec(spec: ImageSpec, command: list[str] | None, args: list[str] | None) -> ExecResult:
    """What runc would exec: `command` overrides the entrypoint, `args` the image's CMD.
    A relative name is looked up in the image's PATH."""
    argv = list(command) if command else list(spec.entrypoint)
    if command or args is not None:
        argv += list(args or [])
    if not argv:
        return ExecResult(binary=None, args=(), error="no command specified")
    exe = argv[0]
    prefix = (
        "failed to create containerd task: failed to create shim task: OCI runtime create "
        "failed: runc create failed: unable to start container process: "
    )
    if exe.startswith("/"):
        if exe in spec.binaries:
            return ExecResult(binary=exe, args=tuple(argv[1:]))
        return ExecResult(
            binary=None,
            args=tuple(argv[1:]),
            error=f'{prefix}exec: "{exe}": stat {exe}: no such file or directory: unknown',
        )
    for directory in spec.path:
        candidate = f"{directory.rstrip('/')}/{exe}"
        if candidate in spec.binaries:
            return ExecResult(binary=candidate, args=tuple(argv[1:]))
    return ExecResult(
        binary=None,
        args=tuple(argv[1:]),
        error=f'{prefix}exec: "{exe}": executable file not found in $PATH: unknown',
    )
