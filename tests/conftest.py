"""Test-wide guards: no connection leaves loopback, and a missing optional binary or service
skips a test only when STRATUS_REQUIRE_ALL is unset (CI sets it, so CI cannot go green by
skipping)."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

# CI replays the same generated examples on every run (`STRATUS_HYPOTHESIS_PROFILE=ci`, set by
# `.ci/run`): a red run is reproducible and a green one is not a lucky draw. Locally each run
# explores new examples, which is how the property tests keep finding edge cases.
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis_settings.register_profile("dev")
hypothesis_settings.load_profile(os.environ.get("STRATUS_HYPOTHESIS_PROFILE", "dev"))

REQUIRE_ALL = os.environ.get("STRATUS_REQUIRE_ALL", "") not in ("", "0", "false")


def require(condition: bool, reason: str) -> None:
    """Skip (locally) or fail (under STRATUS_REQUIRE_ALL=1) when a prerequisite is missing."""
    if condition:
        return
    if REQUIRE_ALL:
        pytest.fail(f"STRATUS_REQUIRE_ALL=1 and a prerequisite is missing: {reason}")
    pytest.skip(reason)


# Headless Chromium as it works on this machine kind (NOTES.md): no sandbox as root, and no
# background networking, which the closed network would refuse.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def require_binary(name: str) -> str:
    path = shutil.which(name)
    require(path is not None, f"binary {name!r} is not installed")
    assert path is not None
    return path


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str):
        return True
    if host in ("localhost", "") or host.startswith("/"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guard_address(sock: socket.socket, address: Any) -> None:
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        raise ConnectionRefusedError(f"test guard: connection to {address!r} leaves loopback")


def _connect(self: socket.socket, address: Any) -> None:
    _guard_address(self, address)
    _real_connect(self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _guard_address(self, address)
    return _real_connect_ex(self, address)


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _is_loopback(host):
        raise socket.gaierror(f"test guard: lookup of {host!r} leaves loopback")
    return _real_getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True, scope="session")
def _loopback_only() -> Iterator[None]:
    socket.socket.connect = _connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _getaddrinfo
    try:
        yield
    finally:
        socket.socket.connect = _real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = _real_getaddrinfo


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy setting in the environment would route loopback requests elsewhere.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
