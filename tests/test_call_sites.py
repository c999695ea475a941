"""The list of external call sites is the code's, not a hand-kept one (issue 14).

`tests.support.call_sites.scan` reads the code; `tests.support.registry.REGISTRY` is what was
reviewed. A new Slack method, Kubernetes request, PromQL call, Messages API call or database
transaction — or a new place that makes an existing one — fails here until the registry is
regenerated, and the transient-fault matrix then has a row for it (checked below)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from tests.support.call_sites import CLIENT_IMPORTS, bot_sites, client_imports, scan
from tests.support.registry import REGISTRY
from tests.support.transient import DEAD, DRIVES, SITES


def test_the_registry_is_what_the_code_calls() -> None:
    found = scan()
    missing = {s: locs for s, locs in found.items() if REGISTRY.get(s) != locs}
    stale = sorted(set(REGISTRY) - set(found))
    assert not missing and not stale, (
        f"call sites changed: new or moved {missing}, gone {stale}; regenerate with "
        "`.venv/bin/python -m tests.support.call_sites > tests/support/registry.py`"
    )


def test_every_site_of_the_running_bot_has_a_row_in_the_fault_matrix() -> None:
    assert sorted(bot_sites(REGISTRY)) == sorted(s.id for s in SITES)


def test_no_module_imports_a_client_library_no_rule_reads() -> None:
    unread = {path: libs for path, libs in client_imports().items() if path not in CLIENT_IMPORTS}
    assert unread == {}, "a new module calls out: add a rule to tests/support/call_sites.py"


def test_the_scan_sees_a_new_call_site(tmp_path: Path) -> None:
    """The rules are not vacuous: a module with one call of each kind is found."""
    (tmp_path / "bot").mkdir()
    (tmp_path / "agents" / "adapters").mkdir(parents=True)
    (tmp_path / "storage").mkdir()
    (tmp_path / "bot" / "new.py").write_text(
        textwrap.dedent(
            """
            def remind(client):
                client.reminders_add(text="x", time="in 5 minutes")
            """
        )
    )
    (tmp_path / "agents" / "adapters" / "kubernetes_cluster.py").write_text(
        textwrap.dedent(
            """
            class KubernetesCluster:
                def patch(self, ref):
                    return self._json("PATCH", "/x", what="patch")
            """
        )
    )
    (tmp_path / "storage" / "repo.py").write_text(
        "class R:\n    def add(self):\n        with self._db.write() as s:\n            pass\n"
    )
    ast.parse((tmp_path / "bot" / "new.py").read_text())
    assert scan(tmp_path) == {
        "db:write": ("storage/repo.py:R.add",),
        "kube:patch": ("agents/adapters/kubernetes_cluster.py:KubernetesCluster.patch",),
        "slack:reminders.add": ("bot/new.py:remind",),
    }


def _called_methods() -> set[str]:
    """Every `x.name(...)` call's method name in the packages of the running bot."""
    root = Path(__file__).resolve().parents[1]
    names: set[str] = set()
    for package in ("bot", "agents", "storage"):
        for file in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    names.add(node.func.attr)
    return names


def test_a_site_marked_dead_has_no_caller() -> None:
    """A dead site's mark goes with its last caller: once something calls the method, its
    cells must be driven like any other (`DRIVES`), not reported as dead."""
    called = _called_methods()
    for site in DEAD:
        methods = {loc.rsplit(".", 1)[-1] for loc in REGISTRY[site]}
        assert not methods & called, f"{site} is marked dead but {methods & called} is called"


def test_drives_and_dead_marks_name_sites_of_the_matrix() -> None:
    ids = {s.id for s in SITES}
    assert set(DRIVES) <= ids
    assert set(DEAD) <= ids
    assert not set(DRIVES) & set(DEAD)
