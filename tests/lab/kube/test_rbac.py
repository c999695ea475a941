"""RBAC in the emulated API server: bearer-token identities, Roles and bindings evaluated for
every request, the real server's 403, and access reviews that agree with what the server does.

Every request goes through the official client (or kubectl) with a token the lab issued to a
ServiceAccount. The cluster is this module's own: bindings are cluster-wide state, and the
shared conformance cluster's tests run as the admin.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from lab.kube.cluster import LabCluster
from tests.conftest import require_binary

SA = ("stratus", "stratus")
USER = "system:serviceaccount:stratus:stratus"
_names = count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[LabCluster]:
    lab = LabCluster(nodes=1)
    lab.serve()
    lab.apply_manifests([_namespace("hotel"), _namespace("shop"), _namespace("stratus")])
    yield lab
    lab.stop()


@pytest.fixture
def ns(cluster: LabCluster) -> str:
    """A fresh namespace holding two ConfigMaps and a Secret."""
    name = f"rbac-{next(_names)}"
    meta = {"namespace": name}
    cluster.apply_manifests(
        [
            _namespace(name),
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", **meta}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", **meta}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "s", **meta},
                "stringData": {"password": "hunter2"},
            },
        ]
    )
    return name


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _as(cluster: LabCluster, tmp_path: Path, sa: tuple[str, str] = SA) -> client.ApiClient:
    path = cluster.write_kubeconfig(tmp_path / f"{sa[0]}-{sa[1]}.kubeconfig", service_account=sa)
    return config.new_client_from_config(str(path))


def _grant(
    cluster: LabCluster,
    *,
    rules: list[dict[str, Any]],
    namespace: str | None,
    subject: dict[str, str] | None = None,
    role_kind: str = "",
) -> str:
    """A Role (or ClusterRole) with `rules`, bound to the ServiceAccount in `namespace`, or
    cluster-wide when `namespace` is None."""
    name = f"grant-{next(_names)}"
    role_kind = role_kind or ("Role" if namespace else "ClusterRole")
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": role_kind,
        "metadata": {"name": name},
        "rules": rules,
    }
    binding: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [subject or {"kind": "ServiceAccount", "name": SA[1], "namespace": SA[0]}],
    }
    if namespace:
        binding["metadata"]["namespace"] = namespace
        if role_kind == "Role":
            role["metadata"]["namespace"] = namespace
    cluster.apply_manifests([role, binding])
    return name


def _status(call: Any) -> int:
    try:
        call()
    except client.ApiException as e:
        return int(e.status)
    return 200


def _forbidden(call: Any) -> dict[str, Any]:
    with pytest.raises(client.ApiException) as caught:
        call()
    assert caught.value.status == 403
    body: dict[str, Any] = json.loads(caught.value.body)
    return body


# --------------------------------------------------------------------------- identities


def test_the_admin_token_and_no_token_keep_full_access_and_an_unknown_token_is_401(
    cluster: LabCluster, ns: str, tmp_path: Path
) -> None:
    admin = config.new_client_from_config_dict(cluster.kubeconfig())
    assert client.CoreV1Api(admin).read_namespaced_secret("s", ns).data["password"]
    anonymous = client.CoreV1Api(client.ApiClient(client.Configuration(host=cluster.url)))
    assert anonymous.list_node().items
    forged = cluster.kubeconfig()
    forged["users"][0]["user"]["token"] = "lab-forged"
    stranger = client.CoreV1Api(config.new_client_from_config_dict(forged))
    assert _status(lambda: stranger.list_namespaced_config_map(ns)) == 401


def test_a_service_account_with_no_binding_gets_the_real_servers_403(
    cluster: LabCluster, ns: str, tmp_path: Path
) -> None:
    core = client.CoreV1Api(_as(cluster, tmp_path))
    assert _forbidden(lambda: core.list_namespaced_pod(ns)) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods is forbidden: User "{USER}" cannot list resource "pods" in API '
        f'group "" in the namespace "{ns}"',
        "reason": "Forbidden",
        "code": 403,
        "details": {"kind": "pods"},
    }
    named = _forbidden(lambda: core.read_namespaced_config_map("cfg", ns))
    assert named["message"] == (
        f'configmaps "cfg" is forbidden: User "{USER}" cannot get resource "configmaps" in '
        f'API group "" in the namespace "{ns}"'
    )
    assert named["details"] == {"name": "cfg", "kind": "configmaps"}
    nodes = _forbidden(core.list_node)
    assert nodes["message"] == (
        f'nodes is forbidden: User "{USER}" cannot list resource "nodes" in API group "" '
        "at the cluster scope"
    )
    apps = client.AppsV1Api(core.api_client)
    scale = _forbidden(
        lambda: apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 2}})
    )
    assert scale["message"] == (
        f'deployments.apps "web" is forbidden: User "{USER}" cannot patch resource '
        f'"deployments/scale" in API group "apps" in the namespace "{ns}"'
    )
    assert scale["details"] == {"name": "web", "group": "apps", "kind": "deployments"}


# --------------------------------------------------------------------------- evaluation


def test_a_rolebinding_grants_only_in_its_namespace_and_never_at_the_cluster_scope(
    cluster: LabCluster, ns: str, tmp_path: Path
) -> None:
    _grant(
        cluster,
        rules=[{"apiGroups": [""], "resources": ["configmaps", "nodes"], "verbs": ["list"]}],
        namespace=ns,
        role_kind="ClusterRole",
    )
    core = client.CoreV1Api(_as(cluster, tmp_path))
    assert {c.metadata.name for c in core.list_namespaced_config_map(ns).items} == {
        "cfg",
        "other",
    }
    assert _status(lambda: core.list_namespaced_config_map("hotel")) == 403
    assert _status(core.list_config_map_for_all_namespaces) == 403
    assert _status(core.list_node) == 403  # nodes are cluster-scoped
    assert _status(lambda: core.read_namespaced_config_map("cfg", ns)) == 403  # list ≠ get


def test_a_clusterrolebinding_grants_everywhere(
    cluster: LabCluster, ns: str, tmp_path: Path
) -> None:
    sa = ("stratus", f"wide-{next(_names)}")
    _grant(
        cluster,
        rules=[{"apiGroups": [""], "resources": ["configmaps", "nodes"], "verbs": ["list"]}],
        namespace=None,
        subject={"kind": "ServiceAccount", "namespace": sa[0], "name": sa[1]},
    )
    core = client.CoreV1Api(_as(cluster, tmp_path, sa))
    assert len(core.list_namespaced_config_map(ns).items) == 2
    assert core.list_config_map_for_all_namespaces().items
    assert core.list_node().items
    # The stratus ServiceAccount itself was not bound.
    assert _status(lambda: client.CoreV1Api(_as(cluster, tmp_path)).list_node()) == 403


def test_subresources_resource_names_wildcards_and_groups(
    cluster: LabCluster, ns: str, tmp_path: Path
) -> None:
    admin = client.AppsV1Api(config.new_client_from_config_dict(cluster.kubeconfig()))
    admin.create_namespaced_deployment(ns, _deployment("web"))
    _grant(
        cluster,
        rules=[
            {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["patch"]},
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "verbs": ["get", "update", "list"],
                "resourceNames": ["cfg"],
            },
            {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]},
        ],
        namespace=ns,
    )
    sa_client = _as(cluster, tmp_path)
    apps = client.AppsV1Api(sa_client)
    core = client.CoreV1Api(sa_client)
    scale = apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}})
    assert scale.spec.replicas == 3
    # The subresource does not grant its parent, nor another subresource.
    assert _status(lambda: apps.patch_namespaced_deployment("web", ns, {})) == 403
    assert _status(lambda: apps.read_namespaced_deployment_scale("web", ns)) == 403
    assert apps.read_namespaced_deployment_status("web", ns).metadata.name == "web"  # */status
    assert _status(lambda: apps.read_namespaced_deployment("web", ns)) == 403
    # resourceNames: the named object only, and never a list (which names nothing).
    assert core.read_namespaced_config_map("cfg", ns).metadata.name == "cfg"
    assert _status(lambda: core.read_namespaced_config_map("other", ns)) == 403
    assert _status(lambda: core.list_namespaced_config_map(ns)) == 403
    # A Group subject: every ServiceAccount of the namespace.
    _grant(
        cluster,
        rules=[{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        namespace=ns,
        subject={"kind": "Group", "name": "system:serviceaccounts:stratus"},
    )
    assert len(core.list_namespaced_config_map(ns).items) == 2
    assert _status(lambda: core.list_namespaced_config_map("hotel")) == 403


def test_a_binding_to_a_missing_role_grants_nothing(
    cluster: LabCluster, ns: str, tmp_path: Path
) -> None:
    cluster.apply_manifests(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "dangling", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"},
            "subjects": [{"kind": "ServiceAccount", "name": SA[1], "namespace": SA[0]}],
        }
    )
    core = client.CoreV1Api(_as(cluster, tmp_path))
    assert _status(lambda: core.list_namespaced_config_map(ns)) == 403


# --------------------------------------------------------------------------- reviews


def _can(auth: client.AuthorizationV1Api, verb: str, resource: str, ns: str, **kw: str) -> bool:
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                verb=verb, resource=resource, namespace=ns, **kw
            )
        )
    )
    return bool(auth.create_self_subject_access_review(review).status.allowed)


def test_access_reviews_answer_what_the_server_enforces(
    cluster: LabCluster, ns: str, tmp_path: Path
) -> None:
    _grant(
        cluster,
        rules=[
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "watch"]},
        ],
        namespace=ns,
    )
    sa_client = _as(cluster, tmp_path)
    auth = client.AuthorizationV1Api(sa_client)
    assert _can(auth, "get", "pods", ns, subresource="log")
    assert not _can(auth, "get", "pods", ns)
    assert _can(auth, "watch", "deployments", ns, group="apps")
    assert not _can(auth, "watch", "deployments", ns)  # the core group has no deployments
    assert not _can(auth, "list", "deployments", "hotel", group="apps")
    assert not _can(auth, "get", "secrets", ns)
    # The answers agree with the requests themselves.
    apps = client.AppsV1Api(sa_client)
    assert apps.list_namespaced_deployment(ns).items == []
    assert _status(lambda: apps.list_namespaced_deployment("hotel")) == 403
    rules = auth.create_self_subject_rules_review(
        client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=ns))
    ).status
    assert rules.incomplete is False
    granted = {
        (g, r, v)
        for rule in rules.resource_rules
        for g in rule.api_groups
        for r in rule.resources
        for v in rule.verbs
    }
    assert {("", "pods/log", "get"), ("apps", "deployments", "watch")} <= granted
    assert not any(r == "secrets" for _, r, _ in granted)
    elsewhere = auth.create_self_subject_rules_review(
        client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace="hotel"))
    ).status
    assert not any("deployments" in r.resources for r in elsewhere.resource_rules)


def test_kubectl_discovers_and_manages_the_rbac_kinds(
    cluster: LabCluster, ns: str, tmp_path: Path
) -> None:
    # kubectl sends no bearer token over plain HTTP, so it is the lab's admin (README, RBAC).
    kubectl = require_binary("kubectl")
    path = cluster.write_kubeconfig(tmp_path / "admin.kubeconfig")
    base = [kubectl, "--kubeconfig", str(path), "--cache-dir", str(tmp_path / "cache")]

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*base, *args], input=stdin, capture_output=True, text=True, check=False, timeout=60
        )

    resources = run("api-resources", "--api-group=rbac.authorization.k8s.io", "-o", "name")
    assert set(resources.stdout.split()) == {
        "clusterrolebindings.rbac.authorization.k8s.io",
        "clusterroles.rbac.authorization.k8s.io",
        "rolebindings.rbac.authorization.k8s.io",
        "roles.rbac.authorization.k8s.io",
    }
    reviews = run("api-resources", "--api-group=authorization.k8s.io", "-o", "name")
    assert set(reviews.stdout.split()) == {
        "selfsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectrulesreviews.authorization.k8s.io",
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": ns},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
    }
    assert run("apply", "-f", "-", stdin=json.dumps(role)).returncode == 0
    assert run("get", "roles", "-n", ns, "-o", "name").stdout.split() == [
        "role.rbac.authorization.k8s.io/reader"
    ]


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": name, "image": "nginx:1.27"}]},
            },
        },
    }
