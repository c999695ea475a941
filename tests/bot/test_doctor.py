"""`stratus doctor` and the deployment manifests it stands behind.

The Slack scopes and the Kubernetes permissions are written once in `bot.doctor`; these tests
hold the Slack app manifest and the kustomize RBAC to exactly those lists, and run each check
against stand-ins: the local Slack workspace (tokens with and without a scope), an HTTP
Prometheus `/-/ready`, an access reviewer granting all but two verbs, a real SQLite database.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from slack_sdk import WebClient

from agents.actions import action_kinds
from agents.adapters.kubernetes_cluster import KubernetesCluster
from bot.cli.doctor import doctor
from bot.doctor import (
    LEADER_PERMISSIONS,
    READ_PERMISSIONS,
    SLACK_BOT_EVENTS,
    SLACK_BOT_SCOPES,
    AccessReviewUnavailable,
    CheckStatus,
    Permission,
    SelfSubjectAccessReviews,
    catalog_actions,
    check_database,
    check_kubernetes,
    check_policy,
    check_prometheus,
    check_slack,
    write_permissions,
)
from lab.slack import SlackWorkspace, TokenSpec, WorkspaceConfig
from lab.slack.config import DEFAULT_BOT_SCOPES
from storage.migrations import current, head, upgrade
from tests.conftest import require_binary

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "manifests" / "slack" / "app-manifest.yaml"
BASE = ROOT / "manifests" / "kustomize" / "base"
OVERLAY = ROOT / "manifests" / "kustomize" / "overlays" / "postgres"
NS = "hotel-reservation"

Grant = tuple[str, str, str]  # (api group, resource, verb)


def grants(permissions: tuple[Permission, ...] | list[Permission]) -> set[Grant]:
    return {(p.group, p.resource, v) for p in permissions for v in p.verbs}


# ------------------------------------------------------------------------------ manifests


def test_the_slack_manifest_asks_for_exactly_the_scopes_and_events_used() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == sorted(SLACK_BOT_SCOPES)
    assert manifest["settings"]["event_subscriptions"]["bot_events"] == list(SLACK_BOT_EVENTS)
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == ["/stratus"]
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert 175 <= len(manifest["display_information"]["long_description"]) <= 4000
    # The local workspace's default token (the demo's) grants at least as much.
    assert set(SLACK_BOT_SCOPES) <= set(DEFAULT_BOT_SCOPES)


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _role_grants(roles: dict[str, dict[str, Any]], name: str) -> set[Grant]:
    return {
        (group, resource, verb)
        for rule in roles[name]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_rbac_grants_exactly_what_the_reads_and_the_catalog_need() -> None:
    documents = _documents(BASE / "rbac.yaml")
    roles = {d["metadata"]["name"]: d for d in documents if d["kind"] == "ClusterRole"}
    writes = list(write_permissions())
    cluster_reads = [p for p in READ_PERMISSIONS if not p.namespaced]
    assert _role_grants(roles, "stratus-read-cluster") == grants(cluster_reads)
    assert _role_grants(roles, "stratus-read") == grants(
        [p for p in READ_PERMISSIONS if p.namespaced]
    )
    assert _role_grants(roles, "stratus-write") == grants([p for p in writes if p.namespaced])
    assert _role_grants(roles, "stratus-write-nodes") == grants(
        [p for p in writes if not p.namespaced]
    )
    assert not any("secrets" in g[1] for g in _role_grants(roles, "stratus-read"))
    # Cluster-scoped roles are bound cluster-wide; namespaced ones only in covered namespaces.
    bindings = {
        (d["kind"], d["roleRef"]["name"]): d
        for d in documents
        if d["kind"] in ("ClusterRoleBinding", "RoleBinding")
    }
    assert set(bindings) == {
        ("ClusterRoleBinding", "stratus-read-cluster"),
        ("ClusterRoleBinding", "stratus-write-nodes"),
        ("RoleBinding", "stratus-read"),
        ("RoleBinding", "stratus-write"),
        ("RoleBinding", "stratus-leader"),
    }
    for (kind, role), binding in bindings.items():
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "stratus", "namespace": "stratus"}
        ]
        if kind == "RoleBinding":
            # The lease lives in Stratus's own namespace; everything else in covered ones.
            assert binding["metadata"]["namespace"] == (
                "stratus" if role == "stratus-leader" else NS
            )
    # The leader Role is namespaced (a Role, not a ClusterRole) and grants only the lease.
    [leader] = [d for d in documents if d["kind"] == "Role"]
    assert leader["metadata"] == {"name": "stratus-leader", "namespace": "stratus"}
    assert _role_grants({"l": leader}, "l") == grants(list(LEADER_PERMISSIONS))
    settings = next(d for d in _documents(BASE / "configmap.yaml") if d["kind"] == "ConfigMap")
    assert settings["data"]["STRATUS_NAMESPACES"] == NS


def test_the_permission_table_covers_every_admissible_action() -> None:
    admissible = set(catalog_actions())
    assert admissible | {"exec", "delete", "data_change"} == set(action_kinds())
    why = " ".join(p.why for p in write_permissions())
    for kind in admissible:
        assert kind in why
    assert ("", "nodes", "create") not in grants(list(write_permissions()))


def _render(path: Path) -> list[dict[str, Any]]:
    kubectl = require_binary("kubectl")
    rendered = subprocess.run(
        [kubectl, "kustomize", str(path)], capture_output=True, text=True, check=False, timeout=60
    )
    assert rendered.returncode == 0, rendered.stderr
    return [d for d in yaml.safe_load_all(rendered.stdout) if d]


def test_the_base_renders_a_hardened_deployment() -> None:
    documents = _render(BASE)
    kinds = sorted(d["kind"] for d in documents)
    for kind in (
        "ClusterRole",
        "ConfigMap",
        "Deployment",
        "NetworkPolicy",
        "Namespace",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "Secret",
        "Service",
        "ServiceAccount",
    ):
        assert kind in kinds
    [deployment] = [d for d in documents if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == "ghcr.io/stratus-sre/stratus:0.1.0"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert pod["serviceAccountName"] == "stratus"
    [secret] = [d for d in documents if d["kind"] == "Secret"]
    assert all("REPLACE-ME" in v or v == "" for v in secret["stringData"].values())


def test_the_postgres_overlay_runs_two_replicas_without_the_sqlite_volume() -> None:
    documents = _render(OVERLAY)
    assert not [d for d in documents if d["kind"] == "PersistentVolumeClaim"]
    [deployment] = [d for d in documents if d["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 2
    volumes = {v["name"] for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes == {"policy", "tmp"}
    [pdb] = [d for d in documents if d["kind"] == "PodDisruptionBudget"]
    assert pdb["spec"] == {
        "minAvailable": 1,
        "selector": pdb["spec"]["selector"],
    }
    [settings] = [
        d for d in documents if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("ings")
    ]
    assert "STRATUS_DATABASE_URL" not in settings["data"]
    [secret] = [d for d in documents if d["kind"] == "Secret"]
    assert secret["stringData"]["STRATUS_DATABASE_URL"].startswith("postgresql+psycopg://")
    [policy] = [d for d in documents if d["kind"] == "NetworkPolicy"]
    assert any(
        port["port"] == 5432 for rule in policy["spec"]["egress"] for port in rule.get("ports", [])
    )


# ------------------------------------------------------------------------------ stand-ins


class Grants:
    """An access reviewer granting exactly `allowed` (a stand-in for the API server)."""

    def __init__(self, allowed: set[tuple[str, str, str, str | None]]) -> None:
        self.allowed_set = allowed
        self.asked: list[tuple[str, str, str, str | None]] = []

    def allowed(self, *, verb: str, group: str, resource: str, namespace: str | None) -> bool:
        self.asked.append((verb, group, resource, namespace))
        return (verb, group, resource, namespace) in self.allowed_set


def everything(namespaces: list[str]) -> set[tuple[str, str, str, str | None]]:
    out: set[tuple[str, str, str, str | None]] = set()
    for p in [*READ_PERMISSIONS, *write_permissions()]:
        for ns in namespaces if p.namespaced else [None]:
            out |= {(v, p.group, p.resource, ns) for v in p.verbs}
    return out


@contextmanager
def http_stand_in(answer: Any) -> Iterator[str]:
    """Serve `answer(handler)` on 127.0.0.1, a free port; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer(self)

        def do_POST(self) -> None:
            answer(self)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _status(code: int) -> Any:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(code)
        handler.end_headers()
        handler.wfile.write(b"Prometheus Server is Ready.\n" if code == 200 else b"not ready\n")

    return answer


def _prometheus_api(handler: BaseHTTPRequestHandler) -> None:
    """Ready, lists the lab's metric names, and answers every query with one series."""
    if handler.path.startswith("/api/v1/label/__name__/values"):
        data: Any = ["up", "http_server_requests_total"]
    elif handler.path.startswith("/api/v1/query"):
        series = {"metric": {"service": "frontend", "peer": "search"}, "value": [0, "1"]}
        data = {"resultType": "vector", "result": [series]}
    else:
        _status(200)(handler)
        return
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.end_headers()
    handler.wfile.write(json.dumps({"status": "success", "data": data}).encode())


@pytest.fixture
def workspace() -> Iterator[SlackWorkspace]:
    narrow = tuple(s for s in SLACK_BOT_SCOPES if s not in ("pins:write", "usergroups:read"))
    config = WorkspaceConfig(
        bot_scopes=tuple(SLACK_BOT_SCOPES),
        extra_tokens=(TokenSpec(token="xoxb-narrow", scopes=narrow),),
    )
    with SlackWorkspace(config) as ws:
        yield ws


@pytest.fixture
def database(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'stratus.db'}"
    upgrade(url)
    return url


# --------------------------------------------------------------------------------- checks


def test_slack_with_every_scope(workspace: SlackWorkspace) -> None:
    client = WebClient(base_url=workspace.api_url, token=workspace.config.bot_token)
    checks = check_slack(client, app_token=workspace.config.app_token)
    assert [(c.name, c.verdict) for c in checks] == [
        ("slack token", CheckStatus.OK),
        ("slack scopes", CheckStatus.OK),
        ("slack app token", CheckStatus.OK),
    ]


def test_slack_names_each_missing_scope(workspace: SlackWorkspace) -> None:
    client = WebClient(base_url=workspace.api_url, token="xoxb-narrow")
    scopes = check_slack(client)[1]
    assert scopes.verdict is CheckStatus.PROBLEM
    assert "pins:write (pins.add/remove" in scopes.detail
    assert "usergroups:read (usergroups.list" in scopes.detail
    assert "chat:write" not in scopes.detail
    assert "app-manifest.yaml" in scopes.fix


def test_slack_with_a_revoked_token_and_a_bad_app_token(workspace: SlackWorkspace) -> None:
    revoked = WebClient(base_url=workspace.api_url, token="xoxb-revoked")
    [token] = check_slack(revoked)
    assert token.verdict is CheckStatus.PROBLEM and "invalid_auth" in token.detail
    client = WebClient(base_url=workspace.api_url, token=workspace.config.bot_token)
    app = check_slack(client, app_token="xapp-wrong")[-1]
    assert (app.name, app.verdict) == ("slack app token", CheckStatus.PROBLEM)


def test_kubernetes_names_each_missing_permission() -> None:
    allowed = everything([NS, "online-shop"])
    allowed.discard(("update", "apps", "deployments", NS))
    allowed.discard(("list", "", "events", "online-shop"))
    reads, writes = check_kubernetes(Grants(allowed), [NS, "online-shop"])
    assert reads.verdict is CheckStatus.PROBLEM
    assert reads.detail == (
        "not allowed: list events in online-shop — what the cluster reported; the cache"
    )
    assert writes.verdict is CheckStatus.PROBLEM
    assert writes.detail.startswith(f"not allowed: update deployments.apps in {NS} — actions ")
    assert "rollback" in writes.detail and "scale" in writes.detail
    assert "RoleBinding" in writes.fix


def test_kubernetes_with_everything_granted_asks_about_every_verb() -> None:
    reviewer = Grants(everything([NS]))
    reads, writes = check_kubernetes(reviewer, [NS])
    assert (reads.verdict, writes.verdict) == (CheckStatus.OK, CheckStatus.OK)
    assert len(reviewer.asked) == len(everything([NS]))
    assert ("update", "", "nodes", None) in reviewer.asked  # cordon: cluster-wide


def test_kubernetes_checks_the_leader_lease_in_its_own_namespace() -> None:
    allowed = everything([NS])
    allowed |= {("get", "coordination.k8s.io", "leases", "stratus")}
    *_, lease = check_kubernetes(Grants(allowed), [NS], lease_namespace="stratus")
    assert (lease.name, lease.verdict) == ("kubernetes leader election", CheckStatus.PROBLEM)
    assert lease.detail == (
        "not allowed: create leases.coordination.k8s.io in stratus — the leader lease "
        "(replicas); update leases.coordination.k8s.io in stratus — the leader lease (replicas)"
    )
    assert "stratus-leader Role" in lease.fix and "STRATUS_LEADER_ELECTION=off" in lease.fix
    allowed |= {(v, "coordination.k8s.io", "leases", "stratus") for v in ("create", "update")}
    *_, lease = check_kubernetes(Grants(allowed), [NS], lease_namespace="stratus")
    assert lease.verdict is CheckStatus.OK and lease.detail == "3 verbs allowed"


class Unanswerable:
    def allowed(self, *, verb: str, group: str, resource: str, namespace: str | None) -> bool:
        raise AccessReviewUnavailable("the API server does not serve authorization.k8s.io/v1")


def test_kubernetes_that_cannot_be_asked_says_so() -> None:
    checks = check_kubernetes(Unanswerable(), [NS])
    assert {c.verdict for c in checks} == {CheckStatus.CANNOT_CHECK}
    assert "kubectl auth can-i" in checks[0].fix


def _kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return path


def _reviews(handler: BaseHTTPRequestHandler) -> None:
    """SelfSubjectAccessReview: allows reads, denies everything else."""
    import json

    body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
    attributes = body["spec"]["resourceAttributes"]
    body["status"] = {"allowed": attributes["verb"] in ("get", "list", "watch")}
    data = json.dumps(body).encode()
    handler.send_response(201)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _allow_all(handler: BaseHTTPRequestHandler) -> None:
    """SelfSubjectAccessReview for a service account with the shipped RBAC: all allowed."""
    import json

    body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
    body["status"] = {"allowed": True}
    data = json.dumps(body).encode()
    handler.send_response(201)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def test_access_reviews_through_the_kubernetes_adapter(tmp_path: Path) -> None:
    with http_stand_in(_reviews) as server:
        cluster = KubernetesCluster.connect(
            kubeconfig=_kubeconfig(tmp_path / "kubeconfig", server), cluster_name="standin"
        )
        try:
            reviewer = SelfSubjectAccessReviews(cluster)
            assert reviewer.allowed(verb="list", group="", resource="pods/log", namespace=NS)
            assert not reviewer.allowed(
                verb="update", group="apps", resource="deployments", namespace=NS
            )
        finally:
            cluster.close()


def test_the_lab_answers_access_reviews_and_its_admin_may_do_everything(
    tmp_path: Path,
) -> None:
    # The least-privilege side (the shipped RBAC, one rule removed at a time) is in
    # tests/bot/test_rbac_on_lab.py; here the lab's own admin kubeconfig, as the demo uses.
    from lab.sim.world import LabWorld, WorldConfig

    config = WorldConfig(apps=(NS,), serve_api=True, kubeconfig=tmp_path / "lab.kubeconfig")
    with LabWorld(config):
        assert config.kubeconfig is not None
        cluster = KubernetesCluster.connect(kubeconfig=config.kubeconfig, cluster_name="lab")
        try:
            checks = check_kubernetes(SelfSubjectAccessReviews(cluster), [NS])
        finally:
            cluster.close()
    assert [(c.name, c.verdict) for c in checks] == [
        ("kubernetes reads", CheckStatus.OK),
        ("kubernetes writes", CheckStatus.OK),
    ]


def test_prometheus_ready_not_ready_and_unreachable() -> None:
    with http_stand_in(_status(200)) as url:
        assert check_prometheus(url).verdict is CheckStatus.OK
    with http_stand_in(_status(503)) as url:
        not_ready = check_prometheus(url + "/")
    assert not_ready.verdict is CheckStatus.PROBLEM and "HTTP 503" in not_ready.detail
    gone = check_prometheus(url, timeout_s=2)  # the stand-in has stopped
    assert gone.verdict is CheckStatus.PROBLEM and "unreachable" in gone.detail
    assert check_prometheus(None).verdict is CheckStatus.SKIPPED


def test_a_promql_server_without_ready_endpoint_is_checked_by_a_query() -> None:
    def promql(handler: BaseHTTPRequestHandler) -> None:
        found = handler.path.startswith("/api/v1/query")
        handler.send_response(200 if found else 404)
        handler.end_headers()
        handler.wfile.write(
            b'{"status": "success", "data": {"resultType": "vector", "result": []}}'
            if found
            else b"not found"
        )

    with http_stand_in(promql) as url:
        check = check_prometheus(url)
    assert check.verdict is CheckStatus.OK and "answers PromQL" in check.detail
    with http_stand_in(_status(404)) as url:
        missing = check_prometheus(url)
    assert missing.verdict is CheckStatus.PROBLEM and "PromQL API" in missing.fix


def test_the_policy_file_is_checked_as_the_bot_would_load_it(tmp_path: Path) -> None:
    assert check_policy(None).verdict is CheckStatus.SKIPPED
    missing = check_policy(tmp_path / "nowhere.yaml")
    assert missing.verdict is CheckStatus.PROBLEM and "nowhere.yaml" in missing.detail
    bad = tmp_path / "policy.yaml"
    bad.write_text("defaults:\n  autonomy: reckless\n")
    invalid = check_policy(bad)
    assert invalid.verdict is CheckStatus.PROBLEM
    assert f"{bad}:2: defaults.autonomy" in invalid.detail
    good = tmp_path / "good.yaml"
    good.write_text("defaults:\n  autonomy: propose\n")
    assert check_policy(good).verdict is CheckStatus.OK


def test_database_migrated_and_not(database: str, tmp_path: Path) -> None:
    assert check_database(database, current=current, head=head).verdict is CheckStatus.OK
    empty = check_database(f"sqlite:///{tmp_path / 'new.db'}", current=current, head=head)
    assert empty.verdict is CheckStatus.PROBLEM
    assert "no revision" in empty.detail and "stratus db upgrade" in empty.fix


# ------------------------------------------------------------------------------------ CLI


def _environment(
    ws: SlackWorkspace, token: str, database: str, prometheus: str, kubeconfig: Path
) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": token,
        "SLACK_APP_TOKEN": ws.config.app_token,
        "SLACK_API_URL": ws.api_url,
        "STRATUS_DATABASE_URL": database,
        "STRATUS_PROMETHEUS_URL": prometheus,
        "KUBECONFIG": str(kubeconfig),
        "STRATUS_NAMESPACES": NS,
        "STRATUS_SETTINGS_FILE": "",
        "STRATUS_WEBHOOK_TOKEN": "a-token",
    }


def test_the_command_prints_each_check_and_fails_on_a_missing_scope(
    workspace: SlackWorkspace, database: str, tmp_path: Path
) -> None:
    with http_stand_in(_prometheus_api) as prometheus, http_stand_in(_allow_all) as kube:
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", kube)
        good = _environment(workspace, workspace.config.bot_token, database, prometheus, kubeconfig)
        result = CliRunner().invoke(doctor, [], env=good)
        assert result.exit_code == 0, result.output
        assert "ok       slack scopes: all 9 scopes granted" in result.output
        assert "ok       database: migrated to" in result.output
        assert "ok       prometheus" in result.output
        assert "ok       signal profile: auto found lab (latency in s)" in result.output
        assert "ok       signal error_rate: its query returns series" in result.output
        assert "ok       kubernetes writes" in result.output
        assert "ok       alertmanager webhook: callers must present a bearer token" in (
            result.output
        )

        strict = CliRunner().invoke(doctor, ["--strict"], env=good)
        assert strict.exit_code == 0, strict.output

        narrow = _environment(workspace, "xoxb-narrow", database, prometheus, kubeconfig)
        result = CliRunner().invoke(doctor, [], env=narrow)
        assert result.exit_code == 1
        assert "PROBLEM  slack scopes: missing: pins:write" in result.output
        assert "fix: add the scopes from manifests/slack/app-manifest.yaml" in result.output


def test_no_webhook_credentials_is_a_problem_with_its_fix(
    workspace: SlackWorkspace, database: str, tmp_path: Path
) -> None:
    with http_stand_in(_status(200)) as prometheus, http_stand_in(_allow_all) as kube:
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", kube)
        env = _environment(workspace, workspace.config.bot_token, database, prometheus, kubeconfig)
        result = CliRunner().invoke(doctor, [], env={**env, "STRATUS_WEBHOOK_TOKEN": ""})
    assert result.exit_code == 1, result.output
    assert "PROBLEM  alertmanager webhook: no credentials" in result.output
    assert "fix: set STRATUS_WEBHOOK_TOKEN" in result.output


def test_a_bad_signal_profile_file_is_a_problem_naming_file_line_and_field(
    workspace: SlackWorkspace, database: str, tmp_path: Path
) -> None:
    profile = tmp_path / "signals.yaml"
    profile.write_text("name: x\nservice_label: app\nrequest_rte: up\n")
    with http_stand_in(_prometheus_api) as prometheus, http_stand_in(_allow_all) as kube:
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", kube)
        env = _environment(workspace, workspace.config.bot_token, database, prometheus, kubeconfig)
        result = CliRunner().invoke(
            doctor, [], env={**env, "STRATUS_SIGNAL_PROFILE_FILE": str(profile)}
        )
    assert result.exit_code == 1, result.output
    problem = "PROBLEM  signal profile: STRATUS_SIGNAL_PROFILE_FILE: "
    assert f"{problem}{profile}:3: request_rte: unknown field" in result.output
    assert "fix: set STRATUS_SIGNAL_PROFILE" in result.output


def test_the_command_exits_2_on_an_invalid_setting() -> None:
    result = CliRunner().invoke(doctor, [], env={"STRATUS_DATABASE_URL": "mysql://x"})
    assert result.exit_code == 2
    assert "STRATUS_DATABASE_URL" in result.output
