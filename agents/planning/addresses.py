"""Addresses in settings (`mongodb-geo:27017`, `http://cart:7070`) that name no Service of the
namespace, or no port of it — and the address they most likely meant.

A derived fix only: when the journal knows the old value, the planner restores that instead.
The correction must be unambiguous (one Service within two edits of the host, one port) or
there is none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.diagnosis.signs import edit_distance
from agents.model import KubeObject

_ADDRESS = re.compile(
    r"^(?P<scheme>[a-z][a-z0-9+.-]*://)?(?P<host>[A-Za-z0-9-]+)(?P<domain>(\.[A-Za-z0-9-]+)*)"
    r"(:(?P<port>\d+))?(?P<rest>/.*)?$"
)
MAX_EDITS = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Correction:
    value: str
    why: str


def _port_numbers(service: KubeObject) -> list[int]:
    ports = (service.body.get("spec") or {}).get("ports") or []
    return [int(p["port"]) for p in ports if isinstance(p, dict) and p.get("port")]


def correct(value: str, services: list[KubeObject]) -> Correction | None:
    """The address `value` should have been, or None when it is fine or the fix is unclear."""
    match = _ADDRESS.match(value.strip())
    if match is None:
        return None
    host, port = match["host"], match["port"]
    by_name = {s.name: s for s in services}
    host_fix = _host_fixed(host, list(by_name))
    if host_fix is None:
        return None
    host_fixed, host_why = host_fix
    port_fix = _port_fixed(port, host_fixed, by_name[host_fixed])
    if port_fix is None:
        return None
    port_fixed, port_why = port_fix
    if host_fixed == host and port_fixed == port:
        return None
    fixed = (
        f"{match['scheme'] or ''}{host_fixed}{match['domain'] or ''}"
        f"{':' + port_fixed if port_fixed else ''}{match['rest'] or ''}"
    )
    return Correction(value=fixed, why="; ".join(w for w in (host_why, port_why) if w))


def _host_fixed(host: str, names: list[str]) -> tuple[str, str] | None:
    """The Service `host` meant, and why it is not `host` itself ("" when it is); None when
    no name is close enough, or two are equally close."""
    if host in names:
        return host, ""
    distances = sorted((edit_distance(host, name), name) for name in names)
    close = [(d, name) for d, name in distances if d <= MAX_EDITS]
    if not close or (len(close) > 1 and close[0][0] == close[1][0]):
        return None
    host_fixed = close[0][1]
    return host_fixed, f"{host} is not a Service of the namespace; {host_fixed} is"


def _port_fixed(port: str | None, host: str, service: KubeObject) -> tuple[str | None, str] | None:
    """The port of `service` that `port` meant, and why it is not `port` itself ("" when it
    is); None when the Service has several ports and `port` is none of them."""
    numbers = _port_numbers(service)
    if port is None or not numbers or int(port) in numbers:
        return port, ""
    if len(numbers) != 1:
        return None
    return str(numbers[0]), f"Service {host} has no port {port}"
