"""Conformance: discovery, CRUD, Status errors, metadata rules, optimistic concurrency.

Runs against the emulator, or a real cluster with STRATUS_TEST_KUBECONFIG.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.lab.kube.conftest import Kubectl, Target, deployment, raw


def _status(e: ApiException) -> dict:
    return json.loads(e.body)


def test_version_has_every_field_the_client_requires(target: Target) -> None:
    info = client.VersionApi(target.api_client).get_code()
    assert info.major and info.minor and info.git_version.startswith("v1.")
    assert info.platform and info.go_version and info.compiler


def test_discovery_lists_resources_with_verbs_and_short_names(target: Target) -> None:
    core = client.CoreV1Api(target.api_client).get_api_resources()
    by_name = {r.name: r for r in core.resources}
    assert by_name["pods"].namespaced and "po" in by_name["pods"].short_names
    assert {"create", "delete", "get", "list", "patch", "update", "watch"} <= set(
        by_name["pods"].verbs
    )
    assert "pods/log" in by_name and "pods/status" in by_name
    assert not by_name["nodes"].namespaced
    apps = client.AppsV1Api(target.api_client).get_api_resources()
    scale = next(r for r in apps.resources if r.name == "deployments/scale")
    assert (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")
    groups = {g.name for g in client.ApisApi(target.api_client).get_api_versions().groups}
    assert {"apps", "autoscaling", "coordination.k8s.io", "events.k8s.io"} <= groups


def test_kubectl_api_resources_resolves_short_names(kubectl: Kubectl) -> None:
    out = kubectl("api-resources", "--api-group=apps").stdout
    assert "deploy" in out and "replicasets" in out
    assert "statefulsets" in kubectl("api-resources").stdout


def test_create_get_replace_delete_and_uid_timestamps(core: client.CoreV1Api, ns: str) -> None:
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg"), data={"a": "1"})
    created = core.create_namespaced_config_map(ns, body)
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.resource_version
    got = core.read_namespaced_config_map("cfg", ns)
    assert got.data == {"a": "1"} and got.metadata.uid == created.metadata.uid
    got.data["b"] = "2"
    replaced = core.replace_namespaced_config_map("cfg", ns, got)
    assert replaced.data == {"a": "1", "b": "2"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    core.delete_namespaced_config_map("cfg", ns)
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("cfg", ns)
    assert info.value.status == 404


def test_not_found_is_a_status_body(core: client.CoreV1Api, ns: str) -> None:
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod("missing", ns)
    body = _status(info.value)
    assert info.value.status == 404
    assert body["kind"] == "Status" and body["reason"] == "NotFound"
    assert body["message"] == 'pods "missing" not found'
    assert body["details"] == {"name": "missing", "kind": "pods"}


def test_already_exists_is_409(core: client.CoreV1Api, ns: str) -> None:
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dup"))
    core.create_namespaced_config_map(ns, body)
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map(ns, body)
    assert info.value.status == 409
    assert _status(info.value)["reason"] == "AlreadyExists"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["spec"].update(replicas=-1), "spec.replicas"),
        (
            lambda d: d["spec"]["template"]["spec"]["containers"][0].pop("image"),
            "spec.template.spec.containers[0].image",
        ),
        (lambda d: d["metadata"].update(name="Not_Valid"), "metadata.name"),
        (lambda d: d["metadata"].update(labels={"app": "bad value!"}), "metadata.labels"),
    ],
    ids=["negative-replicas", "container-without-image", "bad-name", "bad-label-value"],
)
def test_invalid_deployments_are_422_with_causes(
    apps: client.AppsV1Api, ns: str, mutate, field: str
) -> None:
    body = deployment("web")
    mutate(body)
    with pytest.raises(ApiException) as info:
        apps.create_namespaced_deployment(ns, body)
    assert info.value.status == 422
    status = _status(info.value)
    assert status["reason"] == "Invalid"
    assert field in [c["field"] for c in status["details"]["causes"]]


def test_service_port_out_of_range_is_422(core: client.CoreV1Api, ns: str) -> None:
    body = {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 70000}]}}
    with pytest.raises(ApiException) as info:
        core.create_namespaced_service(ns, body)
    assert info.value.status == 422
    assert "must be between 1 and 65535" in _status(info.value)["message"]


def test_wrong_field_type_and_malformed_json_are_400(target: Target, ns: str) -> None:
    body = deployment("web")
    body["spec"]["replicas"] = "three"
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    status, data = raw(target, "POST", path, json.dumps(body).encode())
    assert status == 400
    assert "cannot unmarshal string" in json.loads(data)["message"]
    status, data = raw(target, "POST", path, b'{"metadata": ')
    assert status == 400 and json.loads(data)["reason"] == "BadRequest"


def test_generation_bumps_on_spec_changes_only(apps: client.AppsV1Api, ns: str) -> None:
    created = apps.create_namespaced_deployment(ns, deployment("web"))
    assert created.metadata.generation == 1
    labelled = apps.patch_namespaced_deployment("web", ns, {"metadata": {"labels": {"x": "y"}}})
    assert labelled.metadata.generation == 1
    assert labelled.metadata.resource_version != created.metadata.resource_version
    scaled = apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2


def test_managed_fields_record_the_field_manager(apps: client.AppsV1Api, ns: str) -> None:
    apps.create_namespaced_deployment(ns, deployment("web"))
    patched = apps.patch_namespaced_deployment(
        "web", ns, {"spec": {"replicas": 3}}, field_manager="stratus"
    )
    managers = {m.manager: m for m in patched.metadata.managed_fields}
    assert "OpenAPI-Generator" in managers  # from the User-Agent's product
    assert "f:replicas" in managers["stratus"].fields_v1["f:spec"]
    assert "f:replicas" not in managers["OpenAPI-Generator"].fields_v1.get("f:spec", {})


def test_put_with_a_stale_resource_version_is_409(core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg"), data={"v": "1"})
    )
    first = core.read_namespaced_config_map("cfg", ns)
    second = core.read_namespaced_config_map("cfg", ns)
    first.data["v"] = "2"
    core.replace_namespaced_config_map("cfg", ns, first)
    second.data["v"] = "3"
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("cfg", ns, second)
    assert info.value.status == 409
    assert _status(info.value)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("cfg", ns).data == {"v": "2"}


def test_events_k8s_io_lists_core_events(target: Target, core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_event(
        ns,
        {
            "metadata": {"name": "probe.1"},
            "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": ns},
            "reason": "Testing",
            "message": "hello",
            "type": "Normal",
            "firstTimestamp": "2026-01-05T09:00:00Z",
            "lastTimestamp": "2026-01-05T09:00:00Z",
            "eventTime": "2026-01-05T09:00:00.000000Z",
            "reportingComponent": "test",
            "reportingInstance": "test",
            "action": "Test",
        },
    )
    events = client.EventsV1Api(target.api_client).list_namespaced_event(ns)
    mine = [e for e in events.items if e.reason == "Testing"]
    assert mine and mine[0].note == "hello" and mine[0].regarding.name == "x"
