"""`SimRuntime`: the lab kubelet's container runtime, answering from the apps' behaviour models.

The kubelet model (`lab.kube`) asks three things and we answer from the image registry, the
Pod spec and the cluster's objects as they are *now*:

* `pull`: does the reference exist in the simulated registry (containerd's NotFound text).
* `start`: does the command exist in the image (runc's exec errors, exit 128); does the
  kubelet find the ConfigMaps/Secrets the env needs (CreateContainerConfigError); is it a bad
  build (Go panic, exit 2); does the program's start-up dial succeed — a Mongo address that
  resolves to no Service panics with "no reachable servers" (exit 2), so the kubelet
  crash-loops it. Env is resolved here, once, like a real process's environment.
* `health`: ready when the process is up, past its start-up time, and its readiness probe
  checks the port it really listens on (dependency failures make a service *return errors*,
  not go unready); memory and CPU from the traffic the simulator routed to it last tick; new
  log lines.

The per-process state (`Process`) is what the traffic model reads and writes every tick.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agents.model import JsonObject
from lab.kube.runtime import ClusterView, ContainerHealth, Credentials, PullResult, StartResult
from lab.sim import clusterdns
from lab.sim.dataplane import DataPlane
from lab.sim.images import ImageRegistry, resolve_exec
from lab.sim.kubeobj import EnvError, limits, parse_address, probe_port, resolve_env
from lab.sim.logs import go_panic, line, record
from lab.sim.model import AppModel, Program, Wire
from lab.sim.shell import run_tool

logger = logging.getLogger(__name__)

_MIB = 1024 * 1024
_MAX_PENDING_LOG_LINES = 500


@dataclass(slots=True, kw_only=True)
class Process:
    """One running container: what it executes and what it read at start."""

    namespace: str
    pod: str
    uid: str
    container: str
    workload: str  # the pod's service label (Deployment) — metrics and data plane key on it
    program_name: str  # the model program its binary runs (usually == workload)
    program: Program
    env: dict[str, str]
    port: int  # where it really listens
    probe_port: int | None  # where its readiness probe looks (None: no/exec probe)
    started_at: datetime
    cpu_limit_millis: int | None
    memory_limit_bytes: int | None
    # The image's own leak (a bad build): heap that grows with uptime and is never freed.
    image_leak_mib_per_min: float = 0.0
    # Written by the traffic model each tick:
    rps: float = 0.0
    cpu_demand_millis: float = 0.0
    leak_bytes: float = 0.0
    pending_logs: deque[str] = field(default_factory=lambda: deque(maxlen=_MAX_PENDING_LOG_LINES))

    def uptime_s(self, now: datetime) -> float:
        return (now - self.started_at).total_seconds()

    def memory_bytes(self, now: datetime) -> int:
        mem = self.program.memory
        warm = 1.0 if mem.warmup_s <= 0 else min(1.0, self.uptime_s(now) / mem.warmup_s)
        base = mem.base_mib * _MIB * (0.25 + 0.75 * warm)
        leaked = self.image_leak_mib_per_min * _MIB * self.uptime_s(now) / 60.0
        return int(base + mem.per_rps_kib * 1024 * self.rps + self.leak_bytes + leaked)

    def cpu_millis(self) -> float:
        if self.cpu_limit_millis is None:
            return self.cpu_demand_millis
        return min(self.cpu_demand_millis, float(self.cpu_limit_millis))

    def throttle(self) -> float:
        """How much slower than unthrottled it runs: demand over the CPU limit, at least 1."""
        if not self.cpu_limit_millis or self.cpu_demand_millis <= self.cpu_limit_millis:
            return 1.0
        return self.cpu_demand_millis / self.cpu_limit_millis

    def ready(self, now: datetime) -> bool:
        if self.uptime_s(now) < self.program.startup_s:
            return False
        return self.probe_port is None or self.probe_port == self.port

    def log(self, text: str) -> None:
        self.pending_logs.append(text)

    def drain_logs(self) -> tuple[str, ...]:
        """Take the pending lines. popleft, not copy-and-clear: the simulator may append from
        another thread meanwhile (running mode), and deque operations are atomic."""
        out: list[str] = []
        while True:
            try:
                out.append(self.pending_logs.popleft())
            except IndexError:
                return tuple(out)


class SimRuntime:
    """Implements `lab.kube.runtime.PodRuntime`. Call `attach(view)` before the first start."""

    def __init__(
        self,
        *,
        models: Sequence[AppModel],
        registry: ImageRegistry | None = None,
        dataplane: DataPlane | None = None,
    ) -> None:
        self.models = {m.namespace: m for m in models}
        self.registry = registry or ImageRegistry.from_models(models)
        self.dataplane = dataplane or DataPlane.from_models(models)
        self._view: ClusterView | None = None
        self._procs: dict[tuple[str, str], Process] = {}
        self._lock = threading.Lock()

    def attach(self, view: ClusterView) -> None:
        self._view = view

    @property
    def view(self) -> ClusterView:
        if self._view is None:
            raise RuntimeError("SimRuntime.attach(view) was not called")
        return self._view

    # ------------------------------------------------------------------- PodRuntime

    def pull(self, image: str, credentials: Credentials | None = None) -> PullResult:
        error = self.registry.pull_error(image, credentials or {})
        return PullResult(ok=error is None, message=error or "")

    def start(self, pod: JsonObject, container: JsonObject, now: datetime) -> StartResult:
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace", "default"))
        key = (str(meta.get("uid", meta.get("name", ""))), str(container.get("name", "")))
        with self._lock:
            self._procs.pop(key, None)
        result, proc = self._start(pod, container, now, namespace)
        if proc is not None:
            with self._lock:
                self._procs[key] = proc
        return result

    def health(self, pod: JsonObject, container: JsonObject, now: datetime) -> ContainerHealth:
        meta = pod.get("metadata") or {}
        key = (str(meta.get("uid", meta.get("name", ""))), str(container.get("name", "")))
        with self._lock:
            proc = self._procs.get(key)
            if proc is None:
                return ContainerHealth(ready=False)
            logs = proc.drain_logs()
        return ContainerHealth(
            ready=proc.ready(now),
            memory_bytes=proc.memory_bytes(now),
            cpu_millis=int(proc.cpu_millis()),
            new_log_lines=logs,
        )

    # ------------------------------------------------------------------ for traffic

    def process(self, uid: str, container: str) -> Process | None:
        with self._lock:
            return self._procs.get((uid, container))

    def processes(self) -> list[Process]:
        with self._lock:
            return list(self._procs.values())

    def write_log(
        self, namespace: str, workload: str, message: str, *, level: str, now: datetime
    ) -> int:
        """Every running container of `workload` writes `message` to stdout, in its program's
        log style (`lab.sim.logs.record`); the kubelet collects it with its next health check,
        like the lines the traffic model writes. Returns how many containers wrote it."""
        procs = [p for p in self.processes() if (p.namespace, p.workload) == (namespace, workload)]
        for proc in procs:
            src = f"cmd/{proc.program_name}/main.go"
            if proc.program.protocol not in (Wire.GRPC, Wire.HTTP):
                src = ""
            for text in record(now, proc.program.protocol, level, message, source=src):
                proc.log(text)
        return len(procs)

    def forget_except(self, alive_uids: Iterable[str]) -> None:
        """Drop the processes of pods that no longer exist (the kubelet never says "stop")."""
        alive = set(alive_uids)
        with self._lock:
            for key in [k for k in self._procs if k[0] not in alive]:
                del self._procs[key]

    # ---------------------------------------------------------------------- start

    def _start(
        self, pod: JsonObject, container: JsonObject, now: datetime, namespace: str
    ) -> tuple[StartResult, Process | None]:
        image = str(container.get("image", ""))
        spec = self.registry.get(image)
        if spec is None:
            message = self.registry.pull_error(image) or "image not found"
            return StartResult(
                running=False, exit_code=128, reason="StartError", message=message
            ), None
        exe = resolve_exec(spec, container.get("command"), container.get("args"))
        if exe.binary is None:
            return StartResult(
                running=False, exit_code=128, reason="StartError", message=exe.error
            ), None
        try:
            env = resolve_env(pod, container, self.view)
        except EnvError as e:
            return StartResult(
                running=False, reason="CreateContainerConfigError", message=str(e)
            ), None
        model = self.models.get(namespace)
        workload = self._workload(pod, model)
        found = self._program(exe.binary, workload, model)
        if found is None:
            # A shell or tool with nothing to serve (an init container's gate): it runs to
            # completion against the cluster's Services and exits.
            run = run_tool(
                [exe.binary, *exe.args],
                spec,
                namespace=namespace,
                resolves=lambda svc, ns: self._service(svc, ns or namespace) is not None,
                answers=lambda svc, ns, port: self._resolves(
                    f"{svc}.{ns or namespace}:{port}", namespace, port
                ),
            )
            return StartResult(
                running=False,
                exit_code=run.exit_code,
                reason="Completed" if run.exit_code == 0 else "Error",
                log_lines=run.output,
            ), None
        program_name, program = found
        src = f"cmd/{program_name}/main.go"
        if spec.panic is not None:
            lines = (
                line(now, program.protocol, "INFO", "Reading config...", source=src),
                *go_panic(spec.panic, program_name),
            )
            return StartResult(
                running=False, exit_code=2, reason="Error", message=spec.panic, log_lines=lines
            ), None
        logs = [line(now, program.protocol, "INFO", "Reading config...", source=src)]
        port = program.listen.port
        if program.listen.env is not None and program.listen.env in env:
            text = env[program.listen.env].strip()
            if not text.isdigit() or not 0 < int(text) < 65536:
                logs.append(
                    line(now, program.protocol, "FATAL", f"invalid port {text!r}", source=src)
                )
                return StartResult(
                    running=False,
                    exit_code=1,
                    reason="Error",
                    message=f"invalid port {text!r}",
                    log_lines=tuple(logs),
                ), None
            port = int(text)
        for call in program.calls:
            if not call.connect_at_start:
                continue
            address = env.get(call.address_env or "", f"{call.target}:{call.port}")
            logs.append(
                line(now, program.protocol, "INFO", f"Read database URL: {address}", source=src)
            )
            logs.append(
                line(now, program.protocol, "INFO", "Initializing DB connection...", source=src)
            )
            if not self._resolves(address, namespace, call.port):
                host = parse_address(address)[0]
                lookup = (
                    f"dial tcp: lookup {host} on {clusterdns.CLUSTER_IP}:53: i/o timeout"
                    if not clusterdns.serving(self.view)
                    else f"dial tcp: lookup {host}: no such host"
                )
                reason = "no reachable servers" if call.protocol is Wire.MONGODB else lookup
                return StartResult(
                    running=False,
                    exit_code=2,
                    reason="Error",
                    message=f"panic: {reason}",
                    log_lines=(
                        *logs,
                        *go_panic(reason, program_name, frame="main.initializeDatabase()"),
                    ),
                ), None
            logs.append(
                line(now, program.protocol, "INFO", "New session successfull...", source=src)
            )
        logs.append(line(now, program.protocol, "INFO", f"Starting server at :{port}", source=src))
        cpu_limit, mem_limit = limits(container)
        probe = container.get("readinessProbe")
        proc = Process(
            namespace=namespace,
            pod=str((pod.get("metadata") or {}).get("name", "")),
            uid=str((pod.get("metadata") or {}).get("uid", "")),
            container=str(container.get("name", "")),
            workload=workload or program_name,
            program_name=program_name,
            program=program,
            env=env,
            port=port,
            probe_port=probe_port(container, probe) if isinstance(probe, dict) else None,
            started_at=now,
            cpu_limit_millis=cpu_limit,
            memory_limit_bytes=mem_limit,
            image_leak_mib_per_min=spec.leak_mib_per_min,
        )
        return StartResult(running=True, log_lines=tuple(logs)), proc

    def _workload(self, pod: JsonObject, model: AppModel | None) -> str | None:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if model is not None and model.service_label in labels:
            return str(labels[model.service_label])
        for candidate in ("app.kubernetes.io/name", "app"):
            if candidate in labels:
                return str(labels[candidate])
        return None

    def _program(
        self, binary: str, workload: str | None, model: AppModel | None
    ) -> tuple[str, Program] | None:
        if model is not None and (found := model.program_for_binary(binary, workload)):
            return found
        if binary == clusterdns.BINARY:
            return clusterdns.DEPLOYMENT, clusterdns.PROGRAM
        for other in self.models.values():
            if found := other.program_for_binary(binary, workload):
                return found
        return None

    def _service(self, name: str, namespace: str) -> JsonObject | None:
        return self.view.get("Service", namespace, name)

    def _resolves(self, address: str, namespace: str, default_port: int) -> bool:
        """Does `host:port` name a Service (and one of its ports) that DNS would find?"""
        if not clusterdns.serving(self.view):
            return False  # the lookup itself goes unanswered
        service, ns, port = parse_address(address)
        svc = self._service(service, ns or namespace)
        if svc is None:
            return False
        want = port or default_port
        return any(
            int(p.get("port", 0)) == want for p in (svc.get("spec") or {}).get("ports") or []
        )
