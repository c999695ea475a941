"""Applying manifests (YAML text or dicts) to the lab cluster: create, or replace what exists.

The scenario loader and the demo set up apps this way; `kind: List` documents are expanded
and namespaces go first so that the objects in them can be created.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from agents.model import JsonObject
from lab.kube.api import KubeApi
from lab.kube.errors import BadRequest, NotFound
from lab.kube.jsonutil import copy_obj
from lab.kube.resources import by_kind

Manifests = str | JsonObject | Iterable[JsonObject]


def documents(manifests: Manifests) -> list[JsonObject]:
    if isinstance(manifests, str):
        raw: list[Any] = [d for d in yaml.safe_load_all(manifests) if d]
    elif isinstance(manifests, dict):
        raw = [manifests]
    else:
        raw = list(manifests)
    out: list[JsonObject] = []
    for doc in raw:
        if not isinstance(doc, dict):
            raise BadRequest(f"a manifest must be an object, got {type(doc).__name__}")
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            out.extend(documents(doc["items"]))
        else:
            out.append(doc)
    return sorted(out, key=lambda d: d.get("kind") != "Namespace")


def apply(api: KubeApi, manifests: Manifests, *, field_manager: str) -> list[JsonObject]:
    results: list[JsonObject] = []
    for doc in documents(manifests):
        rt = by_kind(str(doc.get("kind", "")))
        if rt is None or doc.get("apiVersion") not in (None, rt.api_version):
            raise NotFound(
                f'no matches for kind "{doc.get("kind")}" in version "{doc.get("apiVersion")}"'
            )
        meta = doc.get("metadata") or {}
        namespace = (meta.get("namespace") or "default") if rt.namespaced else ""
        name = str(meta.get("name", ""))
        existing = api.store.get(rt.kind, namespace, name) if name else None
        if existing is None:
            created, _ = api.create_object(rt, namespace, doc, manager=field_manager)
            results.append(created)
            continue
        body = copy_obj(doc)
        body.setdefault("metadata", {}).pop("resourceVersion", None)
        results.append(api.update_object(rt, namespace, name, body, manager=field_manager))
    return results
