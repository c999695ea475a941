"""Conformance: JSON patch, merge patch, strategic merge patch (merge keys, directives), and
server-side dry run on every verb."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.lab.kube.conftest import Target, deployment, raw, wait_rolled_out


@pytest.fixture
def web(apps: client.AppsV1Api, ns: str) -> str:
    body = deployment(
        "web",
        replicas=1,
        container={
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "ports": [
                {"containerPort": 80, "name": "http"},
                {"containerPort": 9090, "name": "metrics"},
            ],
        },
        pod={"tolerations": [{"key": "a", "operator": "Exists"}]},
    )
    body["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    apps.create_namespaced_deployment(ns, body)
    return ns


def _container(d: client.V1Deployment, name: str) -> client.V1Container:
    return next(c for c in d.spec.template.spec.containers if c.name == name)


def test_strategic_merge_merges_containers_env_and_ports_by_key(
    apps: client.AppsV1Api, web: str
) -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1.26",
                            "env": [{"name": "B", "value": "changed"}, {"name": "C", "value": "3"}],
                            "ports": [{"containerPort": 9090, "name": "prom"}],
                        }
                    ]
                }
            }
        }
    }
    patched = apps.patch_namespaced_deployment("web", web, patch)
    app = _container(patched, "app")
    assert app.image == "nginx:1.26"
    assert {e.name: e.value for e in app.env} == {"A": "1", "B": "changed", "C": "3"}
    assert {p.container_port: p.name for p in app.ports} == {80: "http", 9090: "prom"}
    assert _container(patched, "sidecar").image == "busybox"  # untouched sibling


def test_strategic_merge_replaces_tolerations_and_honours_delete(
    apps: client.AppsV1Api, web: str
) -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "tolerations": [{"key": "b", "operator": "Exists"}],
                    "containers": [{"name": "sidecar", "$patch": "delete"}],
                }
            }
        }
    }
    patched = apps.patch_namespaced_deployment("web", web, patch)
    assert [t.key for t in patched.spec.template.spec.tolerations] == ["b"]
    assert [c.name for c in patched.spec.template.spec.containers] == ["app"]


def test_merge_patch_replaces_lists_and_null_deletes(apps: client.AppsV1Api, web: str) -> None:
    patch = {
        "metadata": {"labels": {"app": None, "team": "sre"}},
        "spec": {"template": {"spec": {"containers": [{"name": "only", "image": "nginx:1.27"}]}}},
    }
    patched = apps.patch_namespaced_deployment(
        "web", web, patch, _content_type="application/merge-patch+json"
    )
    assert patched.metadata.labels == {"team": "sre"}
    assert [c.name for c in patched.spec.template.spec.containers] == ["only"]


def test_json_patch_operations_and_failed_test_op(apps: client.AppsV1Api, web: str) -> None:
    ops = [
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 2},
        {"op": "add", "path": "/metadata/annotations", "value": {"note": "x"}},
        {"op": "remove", "path": "/spec/template/spec/containers/1"},
    ]
    patched = apps.patch_namespaced_deployment("web", web, ops)
    assert patched.spec.replicas == 2
    assert patched.metadata.annotations["note"] == "x"
    assert len(patched.spec.template.spec.containers) == 1
    with pytest.raises(ApiException) as info:
        apps.patch_namespaced_deployment(
            "web", web, [{"op": "test", "path": "/spec/replicas", "value": 5}]
        )
    assert info.value.status == 422


def test_malformed_patches_are_refused(target: Target, web: str) -> None:
    path = f"/apis/apps/v1/namespaces/{web}/deployments/web"
    status, _ = raw(
        target, "PATCH", path, b"{not json", content_type="application/merge-patch+json"
    )
    assert status == 400
    status, _ = raw(
        target, "PATCH", path, b'{"spec": {}}', content_type="application/json-patch+json"
    )
    assert status == 400
    status, _ = raw(target, "PATCH", path, b"{}", content_type="text/plain")
    assert status == 415
    status, data = raw(
        target,
        "PATCH",
        path,
        b'{"spec": {"replicas": -3}}',
        content_type="application/merge-patch+json",
    )
    assert status == 422 and json.loads(data)["reason"] == "Invalid"


def test_dry_run_create_changes_nothing(core: client.CoreV1Api, ns: str) -> None:
    before = {c.metadata.name for c in core.list_namespaced_config_map(ns).items}
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dry"), data={"a": "b"})
    answer = core.create_namespaced_config_map(ns, body, dry_run="All")
    assert answer.metadata.name == "dry" and answer.data == {"a": "b"}
    assert answer.metadata.uid
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("dry", ns)
    assert info.value.status == 404
    assert {c.metadata.name for c in core.list_namespaced_config_map(ns).items} == before


def test_dry_run_update_patch_and_delete_change_nothing(
    apps: client.AppsV1Api, target: Target, web: str
) -> None:
    current = wait_rolled_out(apps, web, "web", target.timeout_s)
    rv, generation = current.metadata.resource_version, current.metadata.generation
    current.spec.replicas = 5
    replaced = apps.replace_namespaced_deployment("web", web, current, dry_run="All")
    assert replaced.spec.replicas == 5 and replaced.metadata.generation == generation + 1
    patched = apps.patch_namespaced_deployment("web", web, {"spec": {"replicas": 7}}, dry_run="All")
    assert patched.spec.replicas == 7
    apps.delete_namespaced_deployment("web", web, dry_run="All")
    after = apps.read_namespaced_deployment("web", web)
    assert after.spec.replicas == 1
    assert after.metadata.resource_version == rv and after.metadata.generation == generation


def test_dry_run_reports_validation_errors(apps: client.AppsV1Api, web: str) -> None:
    with pytest.raises(ApiException) as info:
        apps.patch_namespaced_deployment("web", web, {"spec": {"replicas": -1}}, dry_run="All")
    assert info.value.status == 422
