"""Discovery documents: `/version`, `/api`, `/apis` and the per-group-version resource lists.

kubectl and the official client resolve every resource through these: plural and singular
names, kind, namespaced flag, verbs, short names, categories ("all") and subresources (the
Scale kind of `deployments/scale` lives in autoscaling/v1). The legacy (unaggregated) form is
enough: clients that ask for aggregated discovery fall back to it.
"""

from __future__ import annotations

from agents.model import JsonObject
from lab.kube.resources import GROUP_VERSIONS, SCALE_GROUP, SCALE_VERSION, resources_of
from lab.kube.server import openapi

KUBE_VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-lab"}


def version() -> JsonObject:
    """Every field the official client requires of `/version`."""
    return {
        "major": KUBE_VERSION["major"],
        "minor": KUBE_VERSION["minor"],
        "emulationMajor": KUBE_VERSION["major"],
        "emulationMinor": KUBE_VERSION["minor"],
        "minCompatibilityMajor": KUBE_VERSION["major"],
        "minCompatibilityMinor": str(int(KUBE_VERSION["minor"]) - 1),
        "gitVersion": KUBE_VERSION["gitVersion"],
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-05T09:00:00Z",
        "goVersion": "go1.23.4",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> JsonObject:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(name: str) -> JsonObject:
    versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in GROUP_VERSIONS[name]]
    return {"name": name, "versions": versions, "preferredVersion": versions[0]}


def api_group_list() -> JsonObject:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(name) for name in GROUP_VERSIONS],
    }


def api_group(name: str) -> JsonObject | None:
    if name not in GROUP_VERSIONS:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name)}


_SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "log": ["get"],
    "finalize": ["update"],
    "eviction": ["create"],
}


def resource_list(group: str, version: str) -> JsonObject | None:
    resources = resources_of(group, version)
    if not resources:
        return None
    entries: list[JsonObject] = []
    for rt in resources:
        entry: JsonObject = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        entries.append(entry)
        for sub in rt.subresources:
            sub_entry: JsonObject = {
                "name": f"{rt.plural}/{sub}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": _SUBRESOURCE_VERBS[sub],
            }
            if sub == "scale":
                sub_entry.update(kind="Scale", group=SCALE_GROUP, version=SCALE_VERSION)
            if sub == "log":
                sub_entry["kind"] = "Pod"
            if sub == "eviction":
                sub_entry.update(kind="Eviction", group="policy", version="v1")
            entries.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }


def _openapi(rest: list[str]) -> JsonObject | None:
    if not rest:
        return openapi.index()
    if rest[0] == "api" and len(rest) == 2:
        return openapi.document("", rest[1])
    if rest[0] == "apis" and len(rest) == 3:
        return openapi.document(rest[1], rest[2])
    return None


def document(segments: list[str], server_address: str) -> JsonObject | None:
    """The discovery (or OpenAPI) document at a path, or None for a 404."""
    head = segments[0] if segments else ""
    if head == "version" and len(segments) == 1:
        return version()
    if head == "api" and len(segments) == 1:
        return api_versions(server_address)
    if head == "api" and len(segments) == 2:
        return resource_list("", segments[1]) if segments[1] == "v1" else None
    if head == "apis" and len(segments) == 1:
        return api_group_list()
    if head == "apis" and len(segments) == 2:
        return api_group(segments[1])
    if head == "apis" and len(segments) == 3:
        return resource_list(segments[1], segments[2])
    if head == "openapi" and segments[1:2] == ["v3"]:
        return _openapi(segments[2:])
    return None
