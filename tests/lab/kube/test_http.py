"""Conformance at the HTTP level: content negotiation (Table, YAML, protobuf refused),
server-side apply, collection deletion, graceful pod deletion, status subresource writes."""

from __future__ import annotations

import json

import yaml
from kubernetes import client

from lab.kube.cluster import LabCluster
from tests.lab.kube.conftest import Target, deployment, eventually, raw, wait_rolled_out

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_table_answers_carry_columns_rows_and_metadata(
    target: Target, apps: client.AppsV1Api, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=1))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    status, data = raw(target, "GET", f"/api/v1/namespaces/{ns}/pods", accept=TABLE)
    table = json.loads(data)
    assert status == 200 and table["kind"] == "Table"
    columns = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0]
    assert columns == ["Name", "Ready", "Status", "Restarts", "Age"]
    row = table["rows"][0]
    assert row["cells"][1:3] == ["1/1", "Running"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"].startswith("web-")
    status, data = raw(
        target, "GET", f"/apis/apps/v1/namespaces/{ns}/deployments/web", accept=TABLE
    )
    assert json.loads(data)["rows"][0]["cells"][:4] == ["web", "1/1", 1, 1]


def test_protobuf_is_refused_so_clients_use_json(lab: LabCluster, target: Target, ns: str) -> None:
    # A real server speaks protobuf; the emulator refuses it and clients fall back to JSON.
    accept = "application/vnd.kubernetes.protobuf"
    assert raw(target, "GET", f"/api/v1/namespaces/{ns}", accept=accept)[0] == 406
    status, _ = raw(
        target,
        "POST",
        f"/api/v1/namespaces/{ns}/configmaps",
        b"k8s\x00\x0a",
        content_type="application/vnd.kubernetes.protobuf",
    )
    assert status == 415


def test_yaml_in_and_out(target: Target, ns: str) -> None:
    status, data = raw(target, "GET", f"/api/v1/namespaces/{ns}", accept="application/yaml")
    assert status == 200 and yaml.safe_load(data)["metadata"]["name"] == ns
    status, data = raw(
        target,
        "POST",
        f"/api/v1/namespaces/{ns}/configmaps",
        b"metadata:\n  name: from-yaml\ndata:\n  a: b\n",
        content_type="application/yaml",
    )
    assert status == 201 and json.loads(data)["data"] == {"a": "b"}


def test_server_side_apply_creates_and_updates(
    target: Target, core: client.CoreV1Api, ns: str
) -> None:
    path = f"/api/v1/namespaces/{ns}/configmaps/applied?fieldManager=stratus"
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"a": "1"},
    }
    status, _ = raw(
        target, "PATCH", path, json.dumps(doc).encode(), content_type="application/apply-patch+yaml"
    )
    assert status in (200, 201)
    doc["data"] = {"a": "2"}
    status, _ = raw(
        target, "PATCH", path, json.dumps(doc).encode(), content_type="application/apply-patch+yaml"
    )
    assert status == 200
    cm = core.read_namespaced_config_map("applied", ns)
    assert cm.data == {"a": "2"}
    assert any(
        m.manager == "stratus" and m.operation == "Apply" for m in cm.metadata.managed_fields
    )


def test_delete_collection_by_label(core: client.CoreV1Api, ns: str) -> None:
    for name, team in (("a", "x"), ("b", "x"), ("c", "y")):
        core.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"team": team}))
        )
    core.delete_collection_namespaced_config_map(ns, label_selector="team=x")
    left = {c.metadata.name for c in core.list_namespaced_config_map(ns).items}
    assert {"a", "b"}.isdisjoint(left) and "c" in left


def test_pod_deletion_is_graceful_then_complete(
    core: client.CoreV1Api, apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=1))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    pod = core.list_namespaced_pod(ns).items[0].metadata.name
    answer = core.delete_namespaced_pod(pod, ns)
    assert answer.metadata.name == pod and answer.metadata.deletion_timestamp

    def gone() -> bool:
        return pod not in {p.metadata.name for p in core.list_namespaced_pod(ns).items}

    eventually(gone, timeout_s=target.timeout_s, what="the pod to terminate")


def test_status_subresource_ignores_spec_and_main_ignores_status(
    core: client.CoreV1Api, target: Target, ns: str
) -> None:
    core.create_namespaced_resource_quota(
        ns, {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "9"}}}
    )
    main = core.patch_namespaced_resource_quota("q", ns, {"status": {"hard": {"pods": "1"}}})
    assert (main.status.hard or {}).get("pods") != "1"
    via_status = core.patch_namespaced_resource_quota_status(
        "q", ns, {"spec": {"hard": {"pods": "1"}}}
    )
    assert via_status.spec.hard == {"pods": "9"}


def test_legacy_watch_path_and_health_endpoints(target: Target, ns: str) -> None:
    status, data = raw(target, "GET", f"/api/v1/watch/namespaces/{ns}/configmaps?timeoutSeconds=1")
    assert status == 200
    events = [json.loads(line) for line in data.splitlines() if line]
    assert [e["type"] for e in events] == ["ADDED"]  # every namespace has kube-root-ca.crt
    assert events[0]["object"]["metadata"]["name"] == "kube-root-ca.crt"
    assert raw(target, "GET", "/readyz", accept="*/*")[0] == 200
