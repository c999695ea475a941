"""The arithmetic of one request's fate: probabilities of success and of each failure, and the
latency of each, combined along the call graph.

Everything is an expectation over the tick's requests rather than a sample, so a run is exact
and cheap: 40 requests a second through 20 services cost a few hundred float operations.
Latencies are medians of a log-normal spread (σ = `JITTER`), which gives the histograms their
shape and lets a slow callee cross a caller's timeout gradually instead of all at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lab.sim.model import Wire

JITTER = 0.35  # σ of log-latency
_SQRT2 = math.sqrt(2.0)


@dataclass(slots=True, kw_only=True)
class Failure:
    p: float
    latency_ms: float
    code: int  # the status the *receiver* of this result sees
    message: str  # the error text as that receiver's client library reports it
    timeout: bool = False
    auth: bool = False  # refused by a database's access control (logged by the database too)


@dataclass(slots=True, kw_only=True)
class Result:
    ok: float = 1.0
    ok_latency_ms: float = 1.0
    failures: list[Failure] = field(default_factory=list)

    @property
    def fail(self) -> float:
        return 1.0 - self.ok


def slower_than(median_ms: float, limit_ms: float) -> float:
    """P(latency > limit) for a log-normal latency with the given median."""
    if median_ms <= 0:
        return 0.0
    z = (math.log(limit_ms) - math.log(median_ms)) / JITTER
    if z > 5.0:  # below 3e-7: never, so that a healthy app reports exactly zero errors
        return 0.0
    return 0.5 * math.erfc(z / _SQRT2)


def merge(failures: list[Failure]) -> list[Failure]:
    """Fold failures with the same code and message (weighted latency)."""
    out: dict[tuple[int, str, bool], Failure] = {}
    for f in failures:
        if f.p <= 0:
            continue
        key = (f.code, f.message, f.timeout)
        have = out.get(key)
        if have is None:
            out[key] = Failure(
                p=f.p, latency_ms=f.latency_ms, code=f.code, message=f.message, timeout=f.timeout
            )
        else:
            total = have.p + f.p
            have.latency_ms = (have.latency_ms * have.p + f.latency_ms * f.p) / total
            have.p = total
    return list(out.values())


def per_request_ok(p_call_ok: float, calls: float) -> float:
    """P(every one of `calls` expected calls succeeds) for one incoming request."""
    if calls <= 0:
        return 1.0
    if calls <= 1:
        return 1.0 - calls * (1.0 - p_call_ok)
    return float(p_call_ok**calls)


# ----------------------------------------------------------------- client-side texts


def refused(wire: Wire, ip: str, port: int) -> str:
    dial = f"dial tcp {ip}:{port}: connect: connection refused"
    return _transport(wire, dial)


def timed_out_dial(wire: Wire, ip: str, port: int) -> str:
    return _transport(wire, f"dial tcp {ip}:{port}: i/o timeout")


def no_host(wire: Wire, host: str) -> str:
    return _transport(wire, f"dial tcp: lookup {host} on 10.96.0.10:53: no such host")


def dns_timeout(wire: Wire, host: str) -> str:
    """A lookup nobody answers (cluster DNS down): the resolver's read times out."""
    return _transport(
        wire,
        f"dial tcp: lookup {host} on 10.96.0.10:53: "
        "read udp 10.244.0.1:53421->10.96.0.10:53: i/o timeout",
    )


def _transport(wire: Wire, dial: str) -> str:
    if wire is Wire.GRPC:
        return (
            "rpc error: code = Unavailable desc = connection error: desc = "
            f'"transport: Error while dialing: {dial}"'
        )
    if wire is Wire.MONGODB:
        return "no reachable servers"
    if wire is Wire.REDIS:
        return f"It was not possible to connect to the redis server(s). UnableToConnect ({dial})"
    return dial


def deadline(wire: Wire, target: str, timeout_ms: float) -> str:
    if wire is Wire.GRPC:
        return "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
    if wire is Wire.HTTP:
        return (
            f'Get "http://{target}/": context deadline exceeded '
            "(Client.Timeout exceeded while awaiting headers)"
        )
    if wire is Wire.MONGODB:
        return "i/o timeout"
    return f"{target}: operation timed out after {int(timeout_ms)}ms"


def server_error(wire: Wire, target: str, code: int, message: str) -> str:
    """How a caller's client library reports an error response."""
    if wire is Wire.GRPC:
        grpc = {503: "Unavailable", 504: "DeadlineExceeded", 401: "Unauthenticated"}.get(
            code, "Unknown"
        )
        return f"rpc error: code = {grpc} desc = {message}"
    if wire is Wire.HTTP:
        return f"{target} responded {code}: {message}"
    return message


def mongo_auth_failed() -> str:
    return "server returned error on SASL authentication step: Authentication failed."


def mongo_unauthorized(database: str, command: str, collection: str) -> str:
    return (
        f"not authorized on {database} to execute command "
        f'{{ {command}: "{collection}", filter: {{}}, $db: "{database}" }}'
    )
