"""Robustness: garbage on every route gets a 4xx (or a 2xx), never a 5xx, never a dead server,
and never a controller crash.

Emulator only (nobody should fuzz a real cluster). Hypothesis sends random bytes, random
JSON, object-shaped JSON with random field values, wrong content types, random paths, query
strings and verbs; after each request the controllers reconcile in the test thread, and any
error they log fails the test.
"""

from __future__ import annotations

import http.client
import json
import logging
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.clock import LabClock
from lab.kube.cluster import LabCluster

RESOURCE_PATHS = [
    "/api/v1/namespaces/{ns}/pods",
    "/api/v1/namespaces/{ns}/pods/{name}",
    "/api/v1/namespaces/{ns}/pods/{name}/log",
    "/api/v1/namespaces/{ns}/pods/{name}/status",
    "/api/v1/namespaces/{ns}/services",
    "/api/v1/namespaces/{ns}/services/{name}",
    "/api/v1/namespaces/{ns}/configmaps/{name}",
    "/api/v1/namespaces/{ns}/secrets",
    "/api/v1/namespaces/{ns}/events",
    "/api/v1/namespaces/{ns}/resourcequotas",
    "/api/v1/namespaces/{ns}/endpoints/{name}",
    "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "/api/v1/namespaces/{ns}",
    "/api/v1/namespaces/{ns}/status",
    "/api/v1/namespaces/{ns}/finalize",
    "/api/v1/namespaces",
    "/api/v1/nodes/{name}",
    "/api/v1/nodes",
    "/api/v1/pods",
    "/api/v1/watch/namespaces/{ns}/pods",
    "/apis/apps/v1/namespaces/{ns}/deployments",
    "/apis/apps/v1/namespaces/{ns}/deployments/{name}",
    "/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale",
    "/apis/apps/v1/namespaces/{ns}/deployments/{name}/status",
    "/apis/apps/v1/namespaces/{ns}/replicasets/{name}",
    "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}/scale",
    "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
    "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}",
    "/apis/events.k8s.io/v1/namespaces/{ns}/events",
    "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
    "/api",
    "/apis",
    "/apis/apps",
    "/apis/apps/v1",
    "/version",
    "/openapi/v3",
    "/openapi/v3/apis/apps/v1",
]
KINDS = [
    "Pod",
    "Deployment",
    "Service",
    "ConfigMap",
    "Secret",
    "ReplicaSet",
    "StatefulSet",
    "Namespace",
    "Node",
    "Event",
    "ResourceQuota",
    "HorizontalPodAutoscaler",
    "Lease",
    "PersistentVolumeClaim",
    "Scale",
    "Endpoints",
    "Nonsense",
]
CONTENT_TYPES = [
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
    "",
    "application/json; charset=utf-8",
]
ACCEPTS = [
    "application/json",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "*/*",
    "text/html",
    "",
]
QUERY_KEYS = [
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "resourceVersion",
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "propagationPolicy",
    "gracePeriodSeconds",
    "tailLines",
    "previous",
    "container",
    "timestamps",
    "sinceSeconds",
    "includeObject",
    "orphanDependents",
    "limitBytes",
]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def k8s_objects(draw: st.DrawFn) -> dict[str, Any]:
    """Object-shaped JSON: right top-level keys, random values underneath, so bodies get past
    the outer checks into decoding, defaulting, validation and the controllers."""
    name = draw(st.sampled_from(["x", "web", "db-0", "Bad_Name", "", "a" * 300]))
    spec = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "replicas": json_values | st.integers(-5, 5),
                "selector": st.just({"matchLabels": {"app": "x"}}) | json_values,
                "template": st.just(
                    {
                        "metadata": {"labels": {"app": "x"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    }
                )
                | json_values,
                "containers": st.lists(
                    st.fixed_dictionaries(
                        {"name": st.text(max_size=5)},
                        optional={
                            "image": st.text(max_size=8),
                            "ports": json_values,
                            "resources": json_values,
                        },
                    ),
                    max_size=2,
                ),
                "ports": st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "port": st.integers(-10, 70000),
                            "targetPort": json_values,
                            "name": st.text(max_size=5),
                        },
                    ),
                    max_size=3,
                ),
                "selector ": json_values,
                "hard": st.dictionaries(
                    st.sampled_from(["pods", "cpu", "requests.memory"]),
                    st.text(max_size=5) | st.integers(),
                ),
                "strategy": json_values,
                "nodeName": st.text(max_size=8),
                "scaleTargetRef": json_values,
                "maxReplicas": json_values,
            },
        )
    )
    obj: dict[str, Any] = {
        "apiVersion": draw(st.sampled_from(["v1", "apps/v1", "autoscaling/v2", "bogus/v9"])),
        "kind": draw(st.sampled_from(KINDS)),
        "metadata": draw(
            st.fixed_dictionaries(
                {"name": st.just(name)},
                optional={
                    "labels": json_values,
                    "namespace": st.sampled_from(["fuzz", "other"]),
                    "resourceVersion": st.text(max_size=5),
                    "finalizers": json_values,
                    "ownerReferences": json_values,
                    "generateName": st.text(max_size=5),
                },
            )
        ),
        "spec": spec,
    }
    if draw(st.booleans()):
        obj["data"] = draw(json_values)
    if draw(st.booleans()):
        obj["status"] = draw(json_values)
    return obj


bodies = (
    st.binary(max_size=200)
    | json_values.map(lambda v: json.dumps(v).encode())
    | k8s_objects().map(lambda v: json.dumps(v).encode())
    | st.lists(
        st.fixed_dictionaries(
            {
                "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "nope"]),
                "path": st.sampled_from(["/spec/replicas", "/metadata", "", "/x/y", "/spec/-"]),
            },
            optional={"value": json_values, "from": st.text(max_size=8)},
        ),
        max_size=3,
    ).map(lambda v: json.dumps(v).encode())
    | st.just(b"")
)

VALID: dict[str, tuple[str, dict[str, Any]]] = {
    "pods": (
        "/api/v1/namespaces/fuzz/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "x"}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx:1.25",
                        "ports": [{"containerPort": 80, "name": "http"}],
                        "resources": {"requests": {"cpu": "100m"}},
                    }
                ]
            },
        },
    ),
    "deployments": (
        "/apis/apps/v1/namespaces/fuzz/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
                },
            },
        },
    ),
    "statefulsets": (
        "/apis/apps/v1/namespaces/fuzz/statefulsets",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "s"},
            "spec": {
                "replicas": 2,
                "serviceName": "s",
                "selector": {"matchLabels": {"app": "s"}},
                "template": {
                    "metadata": {"labels": {"app": "s"}},
                    "spec": {"containers": [{"name": "c", "image": "lab/crashloop"}]},
                },
            },
        },
    ),
    "services": (
        "/api/v1/namespaces/fuzz/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "svc"},
            "spec": {"selector": {"app": "x"}, "ports": [{"port": 80, "targetPort": "http"}]},
        },
    ),
    "configmaps": (
        "/api/v1/namespaces/fuzz/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}},
    ),
    "resourcequotas": (
        "/api/v1/namespaces/fuzz/resourcequotas",
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q"},
            "spec": {"hard": {"pods": "5", "requests.cpu": "1"}},
        },
    ),
    "horizontalpodautoscalers": (
        "/apis/autoscaling/v2/namespaces/fuzz/horizontalpodautoscalers",
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "minReplicas": 1,
                "maxReplicas": 3,
            },
        },
    ),
    "persistentvolumeclaims": (
        "/api/v1/namespaces/fuzz/persistentvolumeclaims",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "pvc"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    ),
    "nodes": (
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        },
    ),
}


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _leaves(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _leaves(item, (*path, i))
    return out


@st.composite
def mutated_requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str], bytes]:
    """A valid object of a served kind with a few fields replaced by random values: these get
    through decoding into validation, admission, patching and the controllers."""
    plural = draw(st.sampled_from(sorted(VALID)))
    collection, template = VALID[plural]
    obj = json.loads(json.dumps(template))
    for _ in range(draw(st.integers(0, 3))):
        leaves = [p for p in _leaves(obj) if p and p[0] not in ("apiVersion", "kind")]
        path = draw(st.sampled_from(leaves))
        value = draw(
            json_values
            | st.integers(-3, 100_000)
            | st.sampled_from(["", "x", "http", "1Gi", "-1", "500m", "Always", None])
        )
        parent = obj
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = value
    name = template["metadata"]["name"]
    verb = draw(
        st.sampled_from(["POST", "PUT", "PATCH-merge", "PATCH-strategic", "DELETE", "DRYRUN"])
    )
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if verb in ("POST", "DRYRUN"):
        path = collection + ("?dryRun=All" if verb == "DRYRUN" else "")
        return "POST", path, headers, json.dumps(obj).encode()
    item = f"{collection}/{name}"
    if verb == "PUT":
        return "PUT", item, headers, json.dumps(obj).encode()
    if verb == "DELETE":
        policy = draw(st.sampled_from(["Background", "Foreground", "Orphan"]))
        return "DELETE", f"{item}?propagationPolicy={policy}", headers, b""
    patch_type = "merge" if verb == "PATCH-merge" else "strategic-merge"
    headers["Content-Type"] = f"application/{patch_type}-patch+json"
    return "PATCH", item, headers, json.dumps(obj).encode()


segment = st.sampled_from(["fuzz", "default", "x", "web", "nope"]) | st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str], bytes]:
    if draw(st.integers(0, 9)) == 0:
        path = "/" + "/".join(
            urllib.parse.quote(s, safe="") for s in draw(st.lists(segment, max_size=6))
        )
    else:
        template = draw(st.sampled_from(RESOURCE_PATHS))
        path = template.format(
            ns=urllib.parse.quote(draw(segment), safe=""),
            name=urllib.parse.quote(draw(segment), safe=""),
        )
    query = draw(
        st.dictionaries(
            st.sampled_from(QUERY_KEYS),
            st.text(max_size=12)
            | st.sampled_from(
                [
                    "All",
                    "Strict",
                    "Orphan",
                    "Foreground",
                    "1",
                    "-1",
                    "true",
                    "x in (a",
                    "metadata.name=x",
                ]
            ),
            max_size=4,
        )
    )
    if draw(st.booleans()):
        query["watch"] = "1"
    if "watch" in query or "/watch/" in path:
        query["timeoutSeconds"] = "1"  # a watch otherwise (rightly) stays open
    if query:
        path += "?" + urllib.parse.urlencode(query)
    method = draw(st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]))
    headers = {
        "Content-Type": draw(st.sampled_from(CONTENT_TYPES)),
        "Accept": draw(st.sampled_from(ACCEPTS)),
        "User-Agent": draw(st.sampled_from(["fuzz/1.0", "", "kubectl/v1.32"])),
    }
    return method, path, {k: v for k, v in headers.items() if v}, draw(bodies)


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[tuple[LabCluster, _Errors]]:
    cluster = LabCluster(clock=LabClock(stepped=True), seed=3)
    cluster.serve()
    cluster.api.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fuzz"}},
        field_manager="test",
    )
    cluster.reconcile()
    errors = _Errors()
    logger = logging.getLogger("lab.kube")
    logger.addHandler(errors)
    try:
        yield cluster, errors
    finally:
        logger.removeHandler(errors)
        cluster.stop()


def _send(cluster: LabCluster, method: str, path: str, headers: dict[str, str], body: bytes) -> int:
    host, port = cluster.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=15)
    try:
        connection.request(method, path, body=body or None, headers=headers)
        response = connection.getresponse()
        if "watch=1" not in path and "/watch/" not in path:
            response.read()  # a watch's body streams until its timeout: the status is enough
        return response.status
    finally:
        connection.close()


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=requests() | mutated_requests())
def test_garbage_never_gets_a_5xx(
    fuzzed: tuple[LabCluster, _Errors], request: tuple[str, str, dict[str, str], bytes]
) -> None:
    cluster, errors = fuzzed
    method, path, headers, body = request
    status = _send(cluster, method, path, headers, body)
    assert status < 500, f"{method} {path} {headers} {body[:200]!r} -> {status}"
    cluster.clock.advance(1)
    assert not errors.records, [r.getMessage() for r in errors.records]
    assert _send(cluster, "GET", "/version", {}, b"") == 200
