"""What a short-lived tool container does: the `sh -c "nc -z db 27017"` of an init container.

Init containers are mostly one-liners built from busybox applets that gate a pod's start on a
dependency (`nc -z`, `nslookup`, `wget`), or scripts that `exit 1` on purpose. We run the few
applets that gate on the cluster against its Services (DNS resolves a name when a Service of
that name exists; a port answers when the Service declares it), with busybox's own output,
and treat the rest as succeeding silently, as the lab always did. The result depends only on
the command and the cluster's objects, never on who wrote the command.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from lab.sim.images import ImageSpec

#: (Service, its namespace or None for the pod's) → does DNS resolve it;
#: (Service, namespace or None, port) → does a connection to that port succeed.
Resolver = Callable[[str, str | None], bool]
PortCheck = Callable[[str, str | None, int], bool]

_SEPARATORS = re.compile(r"\s*(?:&&|;|\n)\s*")
_CLUSTER_DNS = "10.96.0.10"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRun:
    exit_code: int
    output: tuple[str, ...] = ()


def run_tool(
    argv: list[str],
    spec: ImageSpec,
    *,
    namespace: str,
    resolves: Resolver,
    answers: PortCheck,
) -> ToolRun:
    """Run `argv` (already resolved against the image) to completion."""
    if argv and argv[0].rsplit("/", 1)[-1] in ("sh", "ash", "bash") and argv[1:2] == ["-c"]:
        script = argv[2] if len(argv) > 2 else ""
        commands = [c for c in _SEPARATORS.split(script) if c.strip()]
        output: list[str] = []
        for command in commands:
            try:
                words = shlex.split(command)
            except ValueError:
                return ToolRun(
                    exit_code=2, output=(*output, "sh: syntax error: unterminated quoted string")
                )
            if not words:
                continue
            if words[0] != "exit" and not _has(spec, words[0]):
                return ToolRun(exit_code=127, output=(*output, f"sh: {words[0]}: not found"))
            run = _applet(words, namespace=namespace, resolves=resolves, answers=answers)
            output.extend(run.output)
            if run.exit_code != 0:  # `&&` and `set -e` scripts stop at the first failure
                return ToolRun(exit_code=run.exit_code, output=tuple(output))
        return ToolRun(exit_code=0, output=tuple(output))
    return _applet(argv, namespace=namespace, resolves=resolves, answers=answers)


def _has(spec: ImageSpec, name: str) -> bool:
    if name in ("echo", "true", "false", "sleep", "exit", "set"):
        return True  # shell built-ins
    if name.startswith("/"):
        return name in spec.binaries
    return any(f"{d.rstrip('/')}/{name}" in spec.binaries for d in spec.path)


def _applet(words: list[str], *, namespace: str, resolves: Resolver, answers: PortCheck) -> ToolRun:
    name = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if name == "exit":
        return ToolRun(exit_code=int(args[0]) if args and args[0].isdigit() else 0)
    if name == "false":
        return ToolRun(exit_code=1)
    if name == "echo":
        return ToolRun(exit_code=0, output=(" ".join(args),))
    if name == "nc":
        return _nc(args, namespace=namespace, resolves=resolves, answers=answers)
    if name == "nslookup":
        return _nslookup(args, namespace=namespace, resolves=resolves)
    return ToolRun(exit_code=0)


def _split_host(host: str) -> tuple[str, str | None]:
    parts = host.split(".")
    namespace = parts[1] if len(parts) > 1 and parts[1] not in ("svc", "") else None
    return parts[0], namespace


def _nc(args: list[str], *, namespace: str, resolves: Resolver, answers: PortCheck) -> ToolRun:
    """busybox `nc -z [-w secs] host port`."""
    positional: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in ("-w", "-i", "-p", "-s"):
            skip = True
            continue
        if not arg.startswith("-"):
            positional.append(arg)
    if len(positional) < 2 or not positional[1].isdigit():
        return ToolRun(exit_code=1, output=("BusyBox v1.36.1 (2023-05-18) multi-call binary.",))
    host, port = positional[0], int(positional[1])
    service, ns = _split_host(host)
    if not resolves(service, ns):
        return ToolRun(exit_code=1, output=(f"nc: bad address '{host}'",))
    return ToolRun(exit_code=0 if answers(service, ns, port) else 1)


def _nslookup(args: list[str], *, namespace: str, resolves: Resolver) -> ToolRun:
    hosts = [a for a in args if not a.startswith("-")]
    if not hosts:
        return ToolRun(exit_code=1)
    host = hosts[0]
    service, ns = _split_host(host)
    fqdn = f"{service}.{ns or namespace}.svc.cluster.local"
    header = (f"Server:\t\t{_CLUSTER_DNS}", f"Address:\t{_CLUSTER_DNS}:53", "")
    if not resolves(service, ns):
        return ToolRun(exit_code=1, output=(*header, f"** server can't find {fqdn}: NXDOMAIN", ""))
    return ToolRun(exit_code=0, output=(*header, f"Name:\t{fqdn}", ""))
