"""A minimal OpenAPI v3 document: just enough for kubectl to see that the server validates
fields itself.

kubectl validates manifests before sending them; it skips its own (schema-based) validation
and sends `fieldValidation=Strict` instead when the server's OpenAPI v3 document lists that
query parameter on the PATCH operation of the object's group-version-kind. Serving that much
lets `kubectl apply -f` and `kubectl create -f` work without `--validate=false`; the server's
strict decoding then refuses unknown fields as a real one does. No schemas are published, so
`kubectl explain` is not supported.
"""

from __future__ import annotations

import hashlib
import json

from agents.model import JsonObject
from lab.kube.resources import GROUP_VERSIONS, resources_of

_VERSION = "v1.32.0-lab"


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def group_versions() -> list[tuple[str, str]]:
    return [("", "v1")] + [(g, v) for g, versions in GROUP_VERSIONS.items() for v in versions]


def document(group: str, version: str) -> JsonObject | None:
    resources = resources_of(group, version)
    if not resources:
        return None
    paths: JsonObject = {}
    parameters = [
        {
            "name": "fieldValidation",
            "in": "query",
            "schema": {"type": "string", "uniqueItems": True},
        },
        {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
    ]
    for rt in resources:
        if rt.read_only:
            continue
        prefix = f"/{_gv_path(group, version)}"
        if rt.namespaced:
            prefix += "/namespaces/{namespace}"
        paths[f"{prefix}/{rt.plural}/{{name}}"] = {
            "patch": {
                "operationId": f"patch{rt.kind}",
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {
                    "group": rt.group,
                    "version": rt.version,
                    "kind": rt.kind,
                },
                "parameters": parameters,
                "responses": {"200": {"description": "OK"}},
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": _VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    }


def index() -> JsonObject:
    paths: JsonObject = {}
    for group, version in group_versions():
        doc = document(group, version)
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest.upper()}"}
    return {"paths": paths}
