"""Where requests go and how they end, computed each tick from the cluster's current objects.

For every running process of an app, `AppTraffic.compute` asks what one incoming request
experiences (`outcome`): its own work (slowed by CPU throttling), every call it makes — each
resolved the way the process would resolve it *now*: the address it read from its env at
start, DNS (does the Service exist, does it have that port), kube-proxy (the Endpoints
object's ready addresses and port), and the pod at the other end (is a process listening on
that port, is its node up, what does it answer, does the database accept the caller's
credentials, does the network drop or delay packets) — and the feature flags in force.
Required calls fail the request; optional ones cost latency and fall back. Then the load
flows top-down through the same graph to give every process its request rate (and hence its
CPU and memory), the server-side and client-side counters, and the log lines of every
process that *saw* an error.

Nothing here knows a fault's name: a broken targetPort and a deleted Service both show up as
what they are on the wire.
"""

from __future__ import annotations

import logging
import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from lab.sim import clusterdns
from lab.sim import outcome as txt
from lab.sim.dataplane import AuthOutcome, DataPlane
from lab.sim.flags import FlagReader
from lab.sim.kubeobj import parse_address
from lab.sim.logs import LogLimiter, line
from lab.sim.model import AppModel, Call, Wire
from lab.sim.netpolicy import Source
from lab.sim.outcome import Failure, Result, merge, per_request_ok, slower_than
from lab.sim.runtime import Process
from lab.sim.topology import Topology

logger = logging.getLogger(__name__)

ProcKey = tuple[str, str]  # (pod uid, container)

_HOP_MS = 0.3  # one network hop inside the cluster
#: Where the app's entry load comes from, as a NetworkPolicy ipBlock sees it (TEST-NET-3).
_OUTSIDE_IP = "203.0.113.10"
_FAST_FAIL_MS = 1.0  # a refused connection or failed lookup
_SATURATED_MS = 30_000.0  # a request stuck behind a saturated CPU: past every deadline
_LOG_MIN_RATE = 0.02  # failures per second below which a process does not log them


@dataclass(slots=True, kw_only=True)
class Reached:
    proc: Process
    share: float  # of this edge's calls
    server: Result  # what the callee's server answers this caller


@dataclass(slots=True, kw_only=True)
class EdgeEval:
    call: Call | None
    target: str  # the host actually dialled
    calls_per_request: float
    result: Result  # as the caller sees it
    reached: list[Reached] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class ServerStats:
    codes: dict[int, float] = field(default_factory=lambda: defaultdict(float))  # rps by code
    latency: list[tuple[float, float]] = field(default_factory=list)  # (rps, median ms)


@dataclass(slots=True, kw_only=True)
class Flows:
    """One tick's traffic of one app, as rates (per second)."""

    server: dict[str, ServerStats]  # by workload
    client: dict[tuple[str, str], dict[int, float]]  # (caller, target) → rps by code
    entry_rps: float


class AppTraffic:
    def __init__(self, model: AppModel, dataplane: DataPlane, *, seed: int) -> None:
        self.model = model
        self.dataplane = dataplane
        self.seed = seed
        self.limiter = LogLimiter()
        self.flags = FlagReader(model.flags, model.namespace) if model.flags else None
        self._entry_call = Call(
            target=model.entry.target,
            port=model.entry.port,
            protocol=model.entry.protocol,
            timeout_ms=model.entry.timeout_ms,
        )
        phase_rng = random.Random(f"{seed}:{model.app}:phase")
        self._phase = phase_rng.uniform(0, 2 * math.pi)
        # Per-compute state:
        self._topo: Topology | None = None
        self._now = datetime.min
        self._live: dict[ProcKey, Process] = {}
        self._by_pod: dict[str, list[Process]] = {}
        self._memo: dict[ProcKey, Result] = {}
        self._edges: dict[ProcKey, list[EdgeEval]] = {}
        self._busy: set[ProcKey] = set()
        self._order: list[ProcKey] = []
        self._flagd_ok: dict[ProcKey, float] = {}

    def entry_rps(self, t: float) -> float:
        """The outside load at lab time `t` (epoch seconds): seeded, mild, deterministic."""
        e = self.model.entry
        diurnal = 1.0 + e.diurnal_amplitude * math.sin(
            2 * math.pi * t / e.diurnal_period_s + self._phase
        )
        noise = random.Random(f"{self.seed}:{self.model.app}:{int(t)}").uniform(-1.0, 1.0)
        return e.rps * diurnal * (1.0 + e.noise * noise)

    # ------------------------------------------------------------------------ compute

    def compute(
        self,
        now: datetime,
        dt: float,
        topo: Topology,
        procs: list[Process],
    ) -> Flows:
        self._topo, self._now = topo, now
        self._live, self._by_pod = {}, defaultdict(list)
        for proc in procs:
            pod = topo.pods.get(proc.pod)
            if pod is None or pod.uid != proc.uid or proc.container not in pod.running:
                continue
            self._live[(proc.uid, proc.container)] = proc
            self._by_pod[proc.pod].append(proc)
        self._memo, self._edges, self._busy, self._order = {}, {}, set(), []
        self._flagd_ok = {}

        t = now.timestamp()
        entry_rate = self.entry_rps(t)
        entry = self._call(self.model.namespace, {}, self._entry_call)
        for key in sorted(self._live):
            self._outcome(self._live[key])

        rps: dict[ProcKey, float] = defaultdict(float)
        server: dict[str, ServerStats] = defaultdict(ServerStats)
        client: dict[tuple[str, str], dict[int, float]] = defaultdict(lambda: defaultdict(float))
        self._flow(
            self.model.entry.client, entry, entry_rate, rps=rps, server=server, client=client
        )
        for key, proc in self._live.items():
            rps[key] += proc.program.origin_rps
        for key in reversed(self._order):
            proc = self._live[key]
            rate = rps[key]
            for edge in self._edges[key]:
                calls = rate * edge.calls_per_request
                self._flow(proc.workload, edge, calls, rps=rps, server=server, client=client)
                self._log_edge(proc, edge, rate * edge.calls_per_request)
            self._log_own(proc, rate)
        for key, proc in self._live.items():
            proc.rps = rps[key]
            cpu = proc.program.cpu
            proc.cpu_demand_millis = cpu.base_millis + cpu.per_request_ms * proc.rps
            if self.flags is not None:
                for effect, _ in self.flags.active(proc.program_name):
                    leak = effect.memory_leak_mib_per_min / 60.0 * 1024 * 1024 * dt
                    proc.leak_bytes += leak * self._flagd_ok.get(key, 1.0)
        return Flows(server=dict(server), client=dict(client), entry_rps=entry_rate)

    def _flow(
        self,
        caller: str,
        edge: EdgeEval,
        rate: float,
        *,
        rps: dict[ProcKey, float],
        server: dict[str, ServerStats],
        client: dict[tuple[str, str], dict[int, float]],
    ) -> None:
        if rate <= 0:
            return
        counts = client[(caller, edge.target)]
        counts[200] += rate * edge.result.ok
        for f in edge.result.failures:
            counts[f.code] += rate * f.p
        for reached in edge.reached:
            r = rate * reached.share
            key = (reached.proc.uid, reached.proc.container)
            rps[key] += r
            stats = server[reached.proc.workload]
            srv = reached.server
            stats.codes[200] += r * srv.ok
            stats.latency.append((r * srv.ok, srv.ok_latency_ms))
            for f in srv.failures:
                stats.codes[f.code] += r * f.p
                stats.latency.append((r * f.p, f.latency_ms))
                if f.auth:
                    self._emit(
                        reached.proc,
                        "ERROR",
                        f"Checking authorization failed: {f.message}",
                        r * f.p,
                    )

    # ----------------------------------------------------------------------- outcomes

    def _outcome(self, proc: Process) -> Result:
        key = (proc.uid, proc.container)
        if key in self._memo:
            return self._memo[key]
        program = proc.program
        if key in self._busy:  # a call cycle (a pod running another program's binary)
            return Result(
                ok=0.0,
                failures=[
                    Failure(
                        p=1.0,
                        latency_ms=1000.0,
                        code=504,
                        message="context deadline exceeded",
                        timeout=True,
                    )
                ],
            )
        self._busy.add(key)
        own = program.latency_ms * proc.throttle()  # CFS stretches every request
        ok_latency = own
        p_ok = 1.0
        causes: list[Failure] = []
        edges: list[EdgeEval] = []
        failed: dict[str, float] = {}
        flagd_ok = 1.0
        for call in program.calls:
            k = call.per_request
            if call.fallback_for is not None:
                k = k + (1.0 - k) * failed.get(call.fallback_for, 0.0)
            edge = self._call(proc.namespace, proc.env, call, caller=proc)
            edge.calls_per_request = k
            edges.append(edge)
            r = edge.result
            failed[call.target] = r.fail
            if self.model.flags is not None and call.target == self.model.flags.source.service:
                flagd_ok = r.ok
            if not call.required:
                ok_latency += k * (
                    r.ok * r.ok_latency_ms + sum(f.p * f.latency_ms for f in r.failures)
                )
                continue
            ok_latency += k * r.ok_latency_ms
            pk = per_request_ok(r.ok, k)
            p_ok *= pk
            if r.fail > 0:
                for f in r.failures:
                    causes.append(
                        Failure(
                            p=(1.0 - pk) * f.p / r.fail,
                            latency_ms=own + f.latency_ms,
                            code=504 if f.timeout else 500,
                            message=f.message,
                        )
                    )
        throttle = proc.throttle()
        if throttle > 1.0:
            # Demand above the CPU limit: only 1/throttle of the work gets done; the rest
            # queues until the callers' deadlines pass (the server sees them cancelled).
            saturated = 1.0 - 1.0 / throttle
            p_ok *= 1.0 - saturated
            causes.append(
                Failure(
                    p=saturated,
                    latency_ms=_SATURATED_MS,
                    code=504,
                    message="context deadline exceeded",
                    timeout=True,
                )
            )
        if self.flags is not None:
            for effect, strength in self.flags.active(proc.program_name):
                ratio = (strength if effect.value_is_ratio else effect.error_ratio) * flagd_ok
                ok_latency += effect.latency_ms * flagd_ok
                if ratio > 0:
                    p_ok *= 1.0 - ratio
                    causes.append(
                        Failure(p=ratio, latency_ms=own, code=effect.code, message=effect.message)
                    )
        raw = sum(c.p for c in causes)
        if raw > 0:
            scale = (1.0 - p_ok) / raw
            for c in causes:
                c.p *= scale
        result = Result(ok=p_ok, ok_latency_ms=ok_latency, failures=merge(causes))
        self._busy.discard(key)
        self._flagd_ok[key] = flagd_ok
        self._memo[key] = result
        self._edges[key] = edges
        self._order.append(key)
        return result

    def _call(
        self, namespace: str, env: dict[str, str], call: Call, *, caller: Process | None = None
    ) -> EdgeEval:
        wire = call.protocol
        host, port = call.target, call.port
        ns = namespace
        if call.address_env is not None and call.address_env in env:
            host, other_ns, given = parse_address(env[call.address_env])
            port = given or call.port
            ns = other_ns or namespace
        topo = self._topo
        assert topo is not None
        if caller is not None and not topo.dns_ok:
            # Every dial by name from a pod starts with a lookup cluster DNS no longer
            # answers (the entry load comes from outside and reaches its Service regardless).
            latency = min(call.timeout_ms, clusterdns.LOOKUP_TIMEOUT_MS)
            return _fail(call, host, 504, latency, txt.dns_timeout(wire, host), timeout=True)
        svc = topo.services.get(host) if ns == topo.namespace else None
        if svc is None:
            return _fail(call, host, 503, _FAST_FAIL_MS, txt.no_host(wire, host))
        sp = svc.port(port)
        if sp is None:
            return _fail(
                call,
                host,
                504,
                call.timeout_ms,
                _timeout_text(wire, host, svc.cluster_ip, port, call.timeout_ms),
                timeout=True,
            )
        endpoints = topo.ready_endpoints(host, sp)
        if not endpoints:
            return _fail(call, host, 503, _FAST_FAIL_MS, txt.refused(wire, svc.cluster_ip, port))
        share = 1.0 / len(endpoints)
        ok = ok_lat = 0.0
        failures: list[Failure] = []
        reached: list[Reached] = []
        for ep in endpoints:
            pod = topo.pod_for(ep)
            if pod is None or (pod.node is not None and not topo.node_ready.get(pod.node, True)):
                failures.append(
                    Failure(
                        p=share,
                        latency_ms=call.timeout_ms,
                        code=504,
                        message=_timeout_text(wire, host, ep.ip, ep.port, call.timeout_ms),
                        timeout=True,
                    )
                )
                continue
            if topo.policies and not topo.policies.admits(self._source(caller), pod.body, ep.port):
                # A NetworkPolicy drops the SYN: the dial waits out its timeout.
                failures.append(
                    Failure(
                        p=share,
                        latency_ms=call.timeout_ms,
                        code=504,
                        message=_timeout_text(wire, host, ep.ip, ep.port, call.timeout_ms),
                        timeout=True,
                    )
                )
                continue
            callee = next((p for p in self._by_pod.get(pod.name, []) if p.port == ep.port), None)
            if callee is None:
                failures.append(
                    Failure(
                        p=share,
                        latency_ms=_FAST_FAIL_MS,
                        code=503,
                        message=txt.refused(wire, ep.ip, ep.port),
                    )
                )
                continue
            srv = self._outcome(callee)
            if call.auth is not None:
                srv = self._authorize(call, env, callee, srv)
            net = self.dataplane.network(ns, callee.workload, self._now)
            delay = net.delay_ms if net else 0.0
            loss = net.loss if net else 0.0
            reached.append(Reached(proc=callee, share=share * (1.0 - loss), server=srv))
            if loss > 0:
                failures.append(
                    Failure(
                        p=share * loss,
                        latency_ms=call.timeout_ms,
                        code=504,
                        message=_timeout_text(wire, host, ep.ip, ep.port, call.timeout_ms),
                        timeout=True,
                    )
                )
            arrive = share * (1.0 - loss)
            lat = srv.ok_latency_ms + delay + _HOP_MS
            slow = slower_than(lat, call.timeout_ms)
            ok += arrive * srv.ok * (1.0 - slow)
            ok_lat += arrive * srv.ok * (1.0 - slow) * lat
            timeout_p = arrive * srv.ok * slow
            for f in srv.failures:
                f_lat = f.latency_ms + delay + _HOP_MS
                f_slow = slower_than(f_lat, call.timeout_ms)
                timeout_p += arrive * f.p * f_slow
                failures.append(
                    Failure(
                        p=arrive * f.p * (1.0 - f_slow),
                        latency_ms=f_lat,
                        code=f.code,
                        message=txt.server_error(wire, host, f.code, f.message),
                    )
                )
            if timeout_p > 0:
                failures.append(
                    Failure(
                        p=timeout_p,
                        latency_ms=call.timeout_ms,
                        code=504,
                        message=_timeout_text(wire, host, ep.ip, ep.port, call.timeout_ms),
                        timeout=True,
                    )
                )
        result = Result(
            ok=ok,
            ok_latency_ms=ok_lat / ok if ok > 0 else call.timeout_ms,
            failures=merge(failures),
        )
        if call.retries:
            _retry(result, call.retries)
        return EdgeEval(
            call=call,
            target=host,
            calls_per_request=call.per_request,
            result=result,
            reached=reached,
        )

    def _source(self, caller: Process | None) -> Source:
        """Who dials, as a NetworkPolicy sees it: the caller's pod, or for the app's entry
        load a client outside the cluster."""
        topo = self._topo
        pod = topo.pods.get(caller.pod) if caller is not None and topo is not None else None
        if caller is None or pod is None:
            return Source(namespace=None, labels={}, ip=_OUTSIDE_IP)
        labels = (pod.body.get("metadata") or {}).get("labels") or {}
        return Source(namespace=caller.namespace, labels=labels, ip=pod.ip)

    def _authorize(self, call: Call, env: dict[str, str], callee: Process, srv: Result) -> Result:
        auth = call.auth
        assert auth is not None
        verdict = self.dataplane.authorize(
            callee.namespace,
            callee.workload,
            env.get(auth.user_env, ""),
            env.get(auth.password_env, ""),
            auth.command,
        )
        if verdict == AuthOutcome.OK:
            return srv
        if verdict == AuthOutcome.AUTH_FAILED:
            message = txt.mongo_auth_failed()
        else:
            message = txt.mongo_unauthorized(auth.database, auth.command, auth.collection)
        # A failed command is a server-side error (5xx in the lab's uniform status codes).
        failure = Failure(
            p=1.0, latency_ms=callee.program.latency_ms, code=500, message=message, auth=True
        )
        return Result(ok=0.0, ok_latency_ms=srv.ok_latency_ms, failures=[failure])

    # --------------------------------------------------------------------------- logs

    def _log_edge(self, proc: Process, edge: EdgeEval, rate: float) -> None:
        required = edge.call is None or edge.call.required
        for f in edge.result.failures:
            if required:
                self._emit(proc, "ERROR", f"error calling {edge.target}: {f.message}", rate * f.p)
            else:
                self._emit(
                    proc,
                    "WARN",
                    f"{edge.target} unavailable, continuing without it: {f.message}",
                    rate * f.p,
                )

    def _log_own(self, proc: Process, rate: float) -> None:
        if self.flags is None:
            return
        for effect, strength in self.flags.active(proc.program_name):
            ratio = strength if effect.value_is_ratio else effect.error_ratio
            self._emit(
                proc, "ERROR" if ratio > 0 else "WARN", effect.message, rate * max(ratio, 0.1)
            )
        source = self.model.flags.source.service if self.model.flags else None
        if proc.program_name == source and self.flags.last_error:
            self._emit(proc, "ERROR", self.flags.last_error, 1.0)

    def _emit(self, proc: Process, level: str, message: str, rate: float) -> None:
        if rate < _LOG_MIN_RATE:
            return
        if self.limiter.allow(f"{proc.uid}/{proc.container}", message, self._now.timestamp()):
            src = (
                f"cmd/{proc.program_name}/main.go"
                if proc.program.protocol in (Wire.GRPC, Wire.HTTP)
                else ""
            )
            proc.log(line(self._now, proc.program.protocol, level, message, source=src))


def _timeout_text(wire: Wire, host: str, ip: str, port: int, timeout_ms: float) -> str:
    if wire in (Wire.GRPC, Wire.HTTP):
        return txt.deadline(wire, host, timeout_ms)
    return txt.timed_out_dial(wire, ip, port)


def _fail(
    call: Call, host: str, code: int, latency_ms: float, message: str, *, timeout: bool = False
) -> EdgeEval:
    result = Result(
        ok=0.0,
        ok_latency_ms=latency_ms,
        failures=[
            Failure(p=1.0, latency_ms=latency_ms, code=code, message=message, timeout=timeout)
        ],
    )
    return EdgeEval(call=call, target=host, calls_per_request=call.per_request, result=result)


def _retry(result: Result, retries: int) -> None:
    """Retried transport failures (refused, timed out) fail only if every attempt fails."""
    retriable = [f for f in result.failures if f.code in (503, 504)]
    fr = sum(f.p for f in retriable)
    if fr <= 0 or fr >= 1.0:
        return
    keep = fr**retries
    extra = sum(f.p * f.latency_ms for f in retriable)
    recovered = fr * (1.0 - keep)
    for f in retriable:
        f.p *= keep
    if result.ok + recovered > 0:
        result.ok_latency_ms = (
            result.ok * result.ok_latency_ms + recovered * (result.ok_latency_ms + extra / fr)
        ) / (result.ok + recovered)
    result.ok += recovered
