"""The behaviour model of a simulated app: what each program does, whom it calls, what it costs.

The model describes *programs*, never faults. It says that the binary `/go/bin/geo` listens on
8083, dials the Mongo address it reads from `$DB_ADDR` at start, and runs `find` on `geo-db`
with the credentials in `$DB_USER`/`$DB_PASSWORD`; it never says what happens when somebody
breaks the Service in front of it. Symptoms come from evaluating this description against the
cluster's actual objects (`lab.sim.traffic`), so any way of breaking something and any correct
fix behave the same.

The file is YAML (`lab/apps/<app>/model.yaml`), validated with pydantic at this boundary and
cross-checked here (call targets exist, fallbacks point at earlier calls, the call graph is
acyclic, binaries exist in some image). Errors name the file, the field path and the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

logger = logging.getLogger(__name__)


class ModelError(ValueError):
    """A behaviour model file is invalid. The message names the file, field and reason."""


class Wire(StrEnum):
    """The protocol a program speaks; it decides how failures read in logs."""

    HTTP = "http"
    GRPC = "grpc"
    MONGODB = "mongodb"
    MEMCACHED = "memcached"
    REDIS = "redis"
    KAFKA = "kafka"


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DbAuth(_Spec):
    """Credentials a call presents to a database, read from the caller's env at start."""

    user_env: str
    password_env: str
    database: str
    command: str = "find"
    collection: str = "data"


class Call(_Spec):
    """One edge of the call graph, from the calling program's point of view."""

    target: str  # the Service name the program dials by default
    port: int = Field(gt=0, lt=65536)
    protocol: Wire = Wire.GRPC
    per_request: float = Field(default=1.0, ge=0)  # calls per incoming request
    required: bool = True  # a failed required call fails the request; optional ones degrade
    timeout_ms: float = Field(default=1000.0, gt=0)
    retries: int = Field(default=0, ge=0, le=5)
    # Take "host:port" from this env var (resolved when the container starts) instead.
    address_env: str | None = None
    # Dial at start (Go services open their Mongo session in main): an address that resolves
    # to no Service makes the program panic with "no reachable servers".
    connect_at_start: bool = False
    auth: DbAuth | None = None
    # A cache-miss path: called for `per_request` of requests plus every request whose call
    # to `fallback_for` (an earlier call of the same program) failed.
    fallback_for: str | None = None


class Listen(_Spec):
    port: int = Field(gt=0, lt=65536)
    env: str | None = None  # the program reads its port from this env var when set


class Cpu(_Spec):
    base_millis: float = Field(default=2.0, ge=0)
    per_request_ms: float = Field(default=0.5, ge=0)  # CPU milliseconds per request


class Memory(_Spec):
    base_mib: float = Field(default=32.0, gt=0)
    per_rps_kib: float = Field(default=64.0, ge=0)  # working set per request/s in flight
    warmup_s: float = Field(default=10.0, ge=0)  # heap grows to base over this long after start


class Program(_Spec):
    """What one binary does once it runs."""

    binary: str
    protocol: Wire = Wire.GRPC
    listen: Listen
    startup_s: float = Field(default=1.0, ge=0)
    latency_ms: float = Field(default=2.0, gt=0)
    cpu: Cpu = Cpu()
    memory: Memory = Memory()
    calls: tuple[Call, ...] = ()
    origin_rps: float = Field(default=0.0, ge=0)  # requests it starts itself (consumers, pollers)


class Entry(_Spec):
    """The outside load (a load generator or the users) and its mild, seeded variation."""

    client: str = "loadgenerator"
    target: str
    port: int = Field(gt=0, lt=65536)
    protocol: Wire = Wire.HTTP
    rps: float = Field(gt=0)
    timeout_ms: float = Field(default=10_000.0, gt=0)
    diurnal_amplitude: float = Field(default=0.1, ge=0, le=0.3)
    diurnal_period_s: float = Field(default=3600.0, gt=0)
    noise: float = Field(default=0.03, ge=0, le=0.1)


class Slo(_Spec):
    error_ratio: float = Field(default=0.01, gt=0, lt=1)
    latency_p99_ms: float = Field(default=500.0, gt=0)


class ImageTag(_Spec):
    binaries: tuple[str, ...]
    entrypoint: tuple[str, ...] = ()
    path: tuple[str, ...] = ("/usr/local/bin", "/usr/bin", "/bin")
    # A bad build: the process panics at start with this line (and a Go stack trace).
    panic: str | None = None
    # A bad build that leaks: its heap grows this much per minute of uptime and is never
    # freed, so the working set climbs until the kernel OOM-kills it at the memory limit.
    leak_mib_per_min: float = Field(default=0.0, ge=0)


class PullAuth(_Spec):
    """The account a private repository accepts (basic auth, as a `docker login` sends)."""

    username: str
    password: str


class Image(_Spec):
    repository: str
    tags: dict[str, ImageTag]
    # A private repository: pulls without these credentials get 401 Unauthorized.
    auth: PullAuth | None = None


class DbUser(_Spec):
    user: str
    password: str
    roles: tuple[str, ...]


class Database(_Spec):
    """A database instance served by the pods of one workload (its data outlives pods)."""

    database: str
    users: tuple[DbUser, ...]


class FlagSource(_Spec):
    service: str  # the flag daemon (flagd); unreachable means every flag reads its default
    configmap: str
    key: str


class FlagEffect(_Spec):
    service: str
    error_ratio: float = Field(default=1.0, ge=0, le=1)
    value_is_ratio: bool = False  # numeric flag variants are the failure ratio (paymentFailure)
    code: int = 500
    message: str = "feature flag failure"
    latency_ms: float = Field(default=0.0, ge=0)
    memory_leak_mib_per_min: float = Field(default=0.0, ge=0)


class Flags(_Spec):
    source: FlagSource
    effects: dict[str, FlagEffect]


class AppModel(_Spec):
    app: str
    namespace: str
    service_label: str = "app.kubernetes.io/name"  # the pod label naming the workload
    entry: Entry
    slo: Slo = Slo()
    images: tuple[Image, ...]
    services: dict[str, Program]
    databases: dict[str, Database] = {}
    flags: Flags | None = None

    @model_validator(mode="after")
    def _cross_check(self) -> AppModel:
        problems = list(_cross_problems(self))
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def program_for_binary(self, binary: str, workload: str | None) -> tuple[str, Program] | None:
        """The program a container runs, by the binary it executes. The workload's own
        program wins when several workloads share a binary (every Mongo runs `mongod`)."""
        own = self.services.get(workload or "")
        if own is not None and own.binary == binary:
            return workload or "", own
        for name, program in self.services.items():
            if program.binary == binary:
                return name, program
        return None


def _cross_problems(model: AppModel) -> list[str]:
    problems: list[str] = []
    services = model.services
    if model.entry.target not in services:
        problems.append(f"entry.target: unknown service {model.entry.target!r}")
    binaries = {b for image in model.images for tag in image.tags.values() for b in tag.binaries}
    for name, program in services.items():
        where = f"services.{name}"
        if program.binary not in binaries:
            problems.append(f"{where}.binary: {program.binary!r} is in no image")
        seen: set[str] = set()
        for i, call in enumerate(program.calls):
            at = f"{where}.calls[{i}]"
            if call.target not in services:
                problems.append(f"{at}.target: unknown service {call.target!r}")
            if call.fallback_for is not None and call.fallback_for not in seen:
                problems.append(
                    f"{at}.fallback_for: {call.fallback_for!r} is not an earlier call of {name}"
                )
            if call.auth is not None:
                if call.protocol is not Wire.MONGODB:
                    problems.append(f"{at}.auth: only mongodb calls carry credentials")
                if call.target not in model.databases:
                    problems.append(f"{at}.auth: {call.target!r} has no entry in databases")
            seen.add(call.target)
    for db in model.databases:
        if db not in services:
            problems.append(f"databases.{db}: unknown service")
    if model.flags is not None:
        if model.flags.source.service not in services:
            problems.append(f"flags.source.service: unknown service {model.flags.source.service!r}")
        for flag, effect in model.flags.effects.items():
            if effect.service not in services:
                problems.append(f"flags.effects.{flag}.service: unknown {effect.service!r}")
    cycle = _find_cycle({n: [c.target for c in p.calls] for n, p in services.items()})
    if cycle:
        problems.append("services: the call graph has a cycle: " + " → ".join(cycle))
    return problems


def _find_cycle(graph: Mapping[str, list[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state and (found := visit(node)):
            return found
    return None


def parse_model(data: Any, *, source: str = "<model>") -> AppModel:
    """Validate an already-loaded document. Raises `ModelError` naming field and reason."""
    if not isinstance(data, dict):
        raise ModelError(
            f"{source}: expected a mapping at the top level, got {type(data).__name__}"
        )
    try:
        return AppModel.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
            lines.append(f"{source}: {loc}: {err['msg']}")
        raise ModelError("\n".join(lines)) from e


#: libyaml's safe loader when PyYAML was built with it (ten times faster on the apps'
#: manifests, read at every bench run's start), else the pure-Python one; same documents.
SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_model(path: Path) -> AppModel:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ModelError(f"{path}: cannot read: {e}") from e
    try:
        data = yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as e:
        raise ModelError(f"{path}: not valid YAML: {e}") from e
    return parse_model(data, source=str(path))
