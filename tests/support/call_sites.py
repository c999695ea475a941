"""Every place Stratus calls an external service, found by reading the code (issue 14).

A *site* is one operation on the wire of one service: `slack:chat.postMessage`,
`kube:replace` (the adapter method that sends the PUT), `prometheus:custom_query`,
`anthropic:messages.create`, `db:write`. That is the granularity a fault can be injected at
from outside the process (a proxy sees the method and path, or the SQL, not the Python
caller), and it is stable: renaming a function does not change it. Each site lists the code
*locations* (`path:function`) that make it, so a new caller of an existing operation is
noticed too.

`scan()` walks the AST of `bot/`, `agents/` and `storage/`:

* Slack: every call of a `slack_sdk.WebClient` method by name (`client.chat_postMessage(`,
  `self._client.auth_test(` …) in `bot/`, which is the only package allowed to import
  slack_sdk. The Web API method is the name with dots (`files_upload_v2` is Slack's
  three-step upload, kept under its SDK name).
* Kubernetes: each request the adapter sends (`self._json(`, `self._call(`,
  `self._api.call_api(`) in `agents/adapters/kubernetes_cluster.py`, named by the adapter
  method that sends it.
* Prometheus: each `self._client.<method>(` of `PrometheusConnect` in the adapter.
* Anthropic: `self._client.messages.create(` (and any other `self._client.…(` call).
* Plain HTTP: `urllib.request.urlopen(` (only operator commands use it today).
* Database: `….write()` and `….read()` transactions of `storage.db.Database`, the readiness
  probe `check_write()`, the scheduler's job store (`write_engine`), migrations
  (`engine.connect()`).

`tests/test_call_sites.py` fails when `scan()` and `REGISTRY` differ, and when a module of
the three packages imports an HTTP or database client library that no rule here reads.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from slack_sdk import WebClient

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "agents", "storage")

KUBE = "agents/adapters/kubernetes_cluster.py"
PROMETHEUS = "agents/adapters/prometheus_metrics.py"
ANTHROPIC = "agents/adapters/anthropic_model.py"

#: Modules that may import a network or database client library: each is read by a rule
#: above, or listed with the reason it needs none.
CLIENT_IMPORTS = {
    KUBE: "kube rule",
    PROMETHEUS: "prometheus rule",
    ANTHROPIC: "anthropic rule",
    "agents/adapters/retry.py": "urllib3's Retry policy the kube and prometheus adapters share: "
    "it builds no connection",
    "storage/db.py": "database rule (sqlite3 for its error type and the WAL pragma)",
    "bot/doctor.py": "operator command: `stratus doctor` probes (see OPERATOR_COMMANDS)",
    "bot/cli/lab_commands.py": "operator command: talks to the local lab, not a service",
    "bot/socket_close.py": "socket: shuts Slack's Socket Mode socket down to wake its reader",
    "bot/services.py": "socket: the replica's host name",
    "bot/http/endpoints.py": "aiohttp server: requests Stratus answers, not calls it makes",
    "bot/http/server.py": "aiohttp server: requests Stratus answers, not calls it makes",
}
_CLIENT_LIBRARIES = (
    "requests",
    "urllib.request",
    "urllib3",
    "httpx",
    "aiohttp",
    "socket",
    "sqlite3",
    "psycopg",
    "http.client",
    "kubernetes",
    "prometheus_api_client",
    "anthropic",
)

#: Locations that are one-shot commands a person runs at a terminal (and reads the error of),
#: not the running bot: listed by the scan, left out of the fault matrix.
OPERATOR_COMMANDS = ("bot/doctor.py", "bot/cli/")

_WEB_METHODS = frozenset(
    name
    for name in dir(WebClient)
    if not name.startswith("_") and callable(getattr(WebClient, name))
) - {"api_call"}


@dataclass(frozen=True, slots=True, order=True)
class Found:
    site: str
    location: str  # path:function


def _slack_method(sdk_name: str) -> str:
    return sdk_name if sdk_name == "files_upload_v2" else sdk_name.replace("_", ".")


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(qualified function name, node) for every node inside a function."""

    def walk(node: ast.AST, scope: str) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{scope}.{child.name}" if scope else child.name
                yield from walk(child, inner)
            else:
                yield scope, child
                yield from walk(child, scope)

    yield from walk(tree, "")


def _chain(node: ast.AST) -> list[str]:
    """`self._client.messages.create` → ['self', '_client', 'messages', 'create']."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return parts[::-1]


def _sites_in(path: str, tree: ast.Module) -> Iterator[Found]:
    for scope, node in _functions(tree):
        where = f"{path}:{scope or '<module>'}"
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "write_engine"
            and path != "storage/db.py"
        ):
            yield Found("db:scheduler", where)
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        chain = _chain(node.func)
        name = node.func.attr
        if name == "urlopen":
            yield Found("http:urlopen", where)
        if path.startswith("bot/") and name in _WEB_METHODS:
            yield Found(f"slack:{_slack_method(name)}", where)
        elif path == KUBE and chain in (
            ["self", "_json"],
            ["self", "_call"],
            ["self", "_api", "call_api"],
        ):
            method = scope.rsplit(".", 1)[-1]
            if method not in ("_json", "_call"):  # the plumbing itself
                yield Found(f"kube:{method.lstrip('_')}", where)
        elif path in (PROMETHEUS, ANTHROPIC) and chain[:2] == ["self", "_client"]:
            operation = ".".join(chain[2:])
            if operation not in ("close", "_session.close"):
                service = "prometheus" if path == PROMETHEUS else "anthropic"
                yield Found(f"{service}:{operation}", where)
        elif path.startswith("storage/"):
            receiver = chain[-2] if len(chain) >= 2 else ""
            if name in ("write", "read") and not node.args and receiver.endswith("db"):
                yield Found(f"db:{name}", where)
            elif name == "check_write" or (name == "connect" and receiver == "engine"):
                yield Found("db:check_write" if name == "check_write" else "db:migrate", where)
        if path.startswith("bot/") and name == "check_write":
            yield Found("db:check_write", where)


def scan(root: Path = ROOT) -> dict[str, tuple[str, ...]]:
    """site → sorted locations, from the code under `root`."""
    found: set[Found] = set()
    for package in PACKAGES:
        for file in sorted((root / package).rglob("*.py")):
            path = file.relative_to(root).as_posix()
            found.update(_sites_in(path, ast.parse(file.read_text(encoding="utf-8"))))
    sites: dict[str, list[str]] = {}
    for f in sorted(found):
        sites.setdefault(f.site, []).append(f.location)
    return {site: tuple(locations) for site, locations in sorted(sites.items())}


def client_imports(root: Path = ROOT) -> dict[str, list[str]]:
    """module path → the client libraries it imports (for the guard on new call paths)."""
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for file in sorted((root / package).rglob("*.py")):
            path = file.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                for name in names:
                    if any(name == lib or name.startswith(f"{lib}.") for lib in _CLIENT_LIBRARIES):
                        found.setdefault(path, []).append(name)
    return found


def is_operator_command(location: str) -> bool:
    return location.startswith(OPERATOR_COMMANDS)


def bot_sites(registry: dict[str, tuple[str, ...]]) -> list[str]:
    """The sites the running bot makes (at least one location outside operator commands)."""
    return [s for s, locs in registry.items() if any(not is_operator_command(x) for x in locs)]


def registry_source(sites: dict[str, tuple[str, ...]]) -> str:
    lines = [
        '"""The external call sites of Stratus, as `tests/support/call_sites.py` finds them.',
        "",
        "Regenerate with",
        "`.venv/bin/python -m tests.support.call_sites > tests/support/registry.py` and review",
        "the diff: a new site needs a row in the transient-fault matrix",
        '(`tests/support/transient.py`), a new location a look at how it handles a failed call."""',
        "",
        "REGISTRY: dict[str, tuple[str, ...]] = {",
    ]
    for site, locations in sites.items():
        lines.append(f"    {site!r}: (")
        lines += [f"        {location!r}," for location in locations]
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(registry_source(scan()), end="")
