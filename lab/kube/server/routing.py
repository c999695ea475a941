"""Parsing API paths into what they address.

The real server's path grammar is small but has one ambiguity the router must settle the same
way: `/api/v1/namespaces/x/status` is the namespace's status subresource, while
`/api/v1/namespaces/x/pods` is the pods of namespace x. Anything else that does not name a
served resource is a 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from lab.kube.errors import NotFound
from lab.kube.resources import ResourceType, by_path


class Target(StrEnum):
    COLLECTION = "collection"  # list / create / deletecollection / watch
    OBJECT = "object"
    SUBRESOURCE = "subresource"


@dataclass(frozen=True, slots=True)
class Route:
    rt: ResourceType
    target: Target
    namespace: str | None  # None: all namespaces (or a cluster-scoped kind)
    name: str = ""
    subresource: str = ""
    legacy_watch: bool = False


def _not_found() -> NotFound:
    return NotFound("the server could not find the requested resource")


def parse(group: str, version: str, segments: list[str]) -> Route:
    """Route the segments after `/api/v1` or `/apis/<group>/<version>`."""
    legacy_watch = bool(segments) and segments[0] == "watch"
    if legacy_watch:
        segments = segments[1:]
    if not segments or any(s == "" for s in segments):
        raise _not_found()
    namespace: str | None = None
    if segments[0] == "namespaces" and len(segments) >= 3:
        candidate = by_path(group, version, segments[2])
        if candidate is not None and candidate.namespaced:
            namespace = segments[1]
            segments = segments[2:]
    rt = by_path(group, version, segments[0])
    if rt is None:
        raise _not_found()
    rest = segments[1:]
    if rt.namespaced and namespace is None and rest:
        raise _not_found()  # /api/v1/pods/x: pods need a namespace
    if not rest:
        return Route(rt, Target.COLLECTION, namespace, legacy_watch=legacy_watch)
    if len(rest) == 1:
        return Route(
            rt,
            Target.OBJECT,
            namespace if rt.namespaced else "",
            rest[0],
            legacy_watch=legacy_watch,
        )
    if len(rest) == 2 and rest[1] in rt.subresources and not legacy_watch:
        return Route(rt, Target.SUBRESOURCE, namespace if rt.namespaced else "", rest[0], rest[1])
    raise _not_found()
