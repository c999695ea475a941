"""Unit tests of the emulator's building blocks: patches, selectors, managedFields, decoding,
quantities, the schema file, printers and routing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lab.kube import managed, quantity, schema
from lab.kube.errors import BadRequest, NotFound
from lab.kube.patch import (
    PatchApplyError,
    PatchFormatError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from lab.kube.selectors import (
    from_label_selector,
    parse_field_selector,
    parse_label_selector,
    selector_string,
)
from lab.kube.server.printers import pod_status
from lab.kube.server.routing import Target, parse
from tests.lab.kube import schema_gen

# --------------------------------------------------------------------------- patches


def test_strategic_merge_directives() -> None:
    original = {
        "spec": {
            "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}],
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "finalizers": ["one", "two"],
        }
    }
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "z"}],
            "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            "$deleteFromPrimitiveList/finalizers": ["one"],
        }
    }
    result = strategic_merge_patch(original, patch)
    assert result["spec"]["containers"] == [
        {"name": "b", "image": "y"},
        {"name": "a", "image": "z"},
    ]
    assert result["spec"]["strategy"] == {"type": "Recreate"}
    assert result["spec"]["finalizers"] == ["two"]
    assert original["spec"]["containers"][0]["image"] == "x"  # not mutated
    replaced = strategic_merge_patch(
        original, {"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "w"}]}}
    )
    assert replaced["spec"]["containers"] == [{"name": "c", "image": "w"}]
    with pytest.raises(PatchApplyError):
        strategic_merge_patch(original, {"spec": {"containers": [{"image": "no-name"}]}})
    with pytest.raises(PatchFormatError):
        strategic_merge_patch(original, {"$patch": "explode"})


def test_service_ports_merge_on_port_and_container_ports_on_container_port() -> None:
    service = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}
    merged = strategic_merge_patch(
        service, {"spec": {"ports": [{"port": 80, "targetPort": "http"}]}}
    )
    assert merged["spec"]["ports"] == [{"port": 80, "targetPort": "http"}, {"port": 443}]
    container = {"ports": [{"containerPort": 80, "name": "http"}]}
    merged = strategic_merge_patch(container, {"ports": [{"containerPort": 81}]})
    assert [p["containerPort"] for p in merged["ports"]] == [80, 81]


def test_merge_patch_rfc7386() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}, "d": [1]}, {"a": {"b": None}, "d": [2]}) == {
        "a": {"c": 2},
        "d": [2],
    }
    assert merge_patch({"a": 1}, ["replace"]) == ["replace"]


def test_json_patch_rfc6902() -> None:
    doc = {"a": [1, 2], "b": {"c": "x"}}
    ops = [
        {"op": "add", "path": "/a/-", "value": 3},
        {"op": "move", "from": "/b/c", "path": "/d"},
        {"op": "copy", "from": "/a", "path": "/e"},
        {"op": "replace", "path": "/a/0", "value": 0},
        {"op": "remove", "path": "/b"},
        {"op": "add", "path": "/f~1g", "value": True},
    ]
    assert json_patch(doc, ops) == {"a": [0, 2, 3], "d": "x", "e": [1, 2, 3], "f/g": True}
    assert doc == {"a": [1, 2], "b": {"c": "x"}}
    for bad in (
        [{"op": "remove", "path": "/nope"}],
        [{"op": "add", "path": "/a/9", "value": 1}],
        [{"op": "test", "path": "/a", "value": []}],
        [{"op": "fly", "path": "/a"}],
    ):
        with pytest.raises(PatchApplyError):
            json_patch(doc, bad)
    with pytest.raises(PatchFormatError):
        json_patch(doc, {"op": "add"})


# --------------------------------------------------------------------------- selectors


def test_label_selector_grammar() -> None:
    selector = parse_label_selector("app in (web, api),tier!=db,!legacy,env,version>2")
    assert selector.matches({"app": "web", "env": "x", "version": "3"})
    assert not selector.matches({"app": "web", "env": "x", "version": "2"})
    assert not selector.matches({"app": "web", "env": "x", "version": "3", "legacy": "1"})
    assert parse_label_selector("").matches(None)
    for bad in ("a in (b", "=x", "a,,b", "bad key=1"):
        with pytest.raises(BadRequest):
            parse_label_selector(bad)


def test_label_selector_objects_and_strings() -> None:
    raw = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "c", "operator": "In", "values": ["y", "x"]},
            {"key": "d", "operator": "DoesNotExist"},
        ],
    }
    assert selector_string(raw) == "a=1,b=2,c in (x,y),!d"
    assert from_label_selector(raw).matches({"a": "1", "b": "2", "c": "x"})
    assert not from_label_selector(None).matches({})
    assert from_label_selector({}).matches({"anything": "goes"})


def test_field_selector_is_per_kind() -> None:
    selector = parse_field_selector("status.phase=Running,spec.nodeName!=n1", "Pod")
    assert selector.matches(
        {"metadata": {}, "spec": {"nodeName": "n2"}, "status": {"phase": "Running"}}
    )
    assert parse_field_selector("metadata.name==x", "ConfigMap").name == "x"
    with pytest.raises(BadRequest):
        parse_field_selector("status.phase=Running", "ConfigMap")
    with pytest.raises(BadRequest):
        parse_field_selector("nonsense", "Pod")


# --------------------------------------------------------------------------- managedFields


def test_managed_fields_move_ownership_to_the_last_writer() -> None:
    old = {
        "metadata": {"name": "x", "labels": {"a": "1"}},
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "i1"}]}},
        },
    }
    old["metadata"]["managedFields"] = managed.update(
        None,
        old,
        manager="kubectl",
        operation="Update",
        subresource="",
        api_version="apps/v1",
        time="t1",
    )
    new = json.loads(json.dumps(old))
    new["spec"]["replicas"] = 3
    entries = managed.update(
        old,
        new,
        manager="hpa",
        operation="Update",
        subresource="",
        api_version="apps/v1",
        time="t2",
    )
    by_manager = {e["manager"]: e["fieldsV1"] for e in entries}
    assert "f:replicas" in by_manager["hpa"]["f:spec"]
    assert "f:replicas" not in by_manager["kubectl"]["f:spec"]
    container = by_manager["kubectl"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert 'k:{"name":"c"}' in container
    assert managed.update(
        new, new, manager="x", operation="Update", subresource="", api_version="v1", time="t3"
    ) == new["metadata"].get("managedFields", [])


# --------------------------------------------------------------------------- decoding


def test_decode_drops_nulls_and_unknown_fields_and_normalises_quantities() -> None:
    decoded = schema.decode(
        {
            "metadata": {"name": "p", "labels": None, "bogus": 1},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "i",
                        "resources": {"limits": {"cpu": 0.5, "memory": 1024}},
                    }
                ]
            },
        },
        "V1Pod",
        kind="Pod",
        version="v1",
    )
    assert decoded.obj["metadata"] == {"name": "p"}
    assert decoded.unknown_fields == ["metadata.bogus"]
    assert decoded.obj["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "500m",
        "memory": "1024",
    }
    with pytest.raises(BadRequest, match="strict decoding error"):
        schema.decode({"metadata": {"bogus": 1}}, "V1Pod", kind="Pod", version="v1", strict=True)
    with pytest.raises(BadRequest, match="cannot unmarshal bool"):
        schema.decode({"spec": {"replicas": True}}, "V1Deployment", kind="Deployment", version="v1")
    with pytest.raises(BadRequest, match="base64"):
        schema.decode({"data": {"k": "not base64!"}}, "V1Secret", kind="Secret", version="v1")


def test_schema_file_matches_the_installed_client() -> None:
    shipped = Path(schema_gen.SCHEMA_PATH).read_text()
    assert shipped == schema_gen.render(), "regenerate: python -m tests.lab.kube.schema_gen"


# --------------------------------------------------------------------------- quantities


@pytest.mark.parametrize(
    ("text", "millis", "value"),
    [
        ("250m", 250, 1),
        ("2", 2000, 2),
        ("1.5", 1500, 2),
        ("128Mi", 128 * 2**20 * 1000, 128 * 2**20),
        ("1G", 10**12, 10**9),
        ("1e3", 10**6, 1000),
    ],
)
def test_quantities(text: str, millis: int, value: int) -> None:
    assert quantity.millis(text) == millis
    assert quantity.value(text) == value


def test_quantity_formatting_and_errors() -> None:
    assert quantity.format_millis(1500) == "1500m" and quantity.format_millis(2000) == "2"
    assert quantity.format_bytes(256 * 2**20) == "256Mi"
    assert not quantity.is_valid("12 parsecs") and quantity.millis("junk") == 0


# --------------------------------------------------------------------------- printers


def test_pod_status_column_follows_kubectl() -> None:
    now = datetime(2026, 1, 5, 9, 10, tzinfo=UTC)
    finished = (now - timedelta(seconds=42)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "a",
                    "ready": False,
                    "restartCount": 3,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "finishedAt": finished}},
                }
            ],
        },
    }
    assert pod_status(pod, now)[0] == "CrashLoopBackOff"
    assert pod_status(pod, now)[3] == "3 (42s ago)"
    pod["metadata"]["deletionTimestamp"] = finished
    assert pod_status(pod, now)[0] == "Terminating"
    init = {
        "metadata": {"name": "p"},
        "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]},
        "status": {
            "phase": "Pending",
            "initContainerStatuses": [
                {
                    "name": "i",
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "PodInitializing"}},
                }
            ],
        },
    }
    assert pod_status(init, now)[0] == "Init:0/1"


# --------------------------------------------------------------------------- routing


def test_routing_settles_the_namespaces_ambiguity() -> None:
    route = parse("", "v1", ["namespaces", "x", "status"])
    assert (route.rt.kind, route.target, route.subresource) == (
        "Namespace",
        Target.SUBRESOURCE,
        "status",
    )
    route = parse("", "v1", ["namespaces", "x", "pods"])
    assert (route.rt.kind, route.target, route.namespace) == ("Pod", Target.COLLECTION, "x")
    route = parse("apps", "v1", ["namespaces", "x", "deployments", "web", "scale"])
    assert route.subresource == "scale" and route.name == "web"
    assert parse("", "v1", ["watch", "namespaces", "x", "pods"]).legacy_watch
    for bad in (["pods", "x"], ["nothing"], ["namespaces", "x", "pods", "y", "exec"]):
        with pytest.raises(NotFound):
            parse("", "v1", bad)
