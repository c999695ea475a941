"""The LimitRanger admission plugin: a namespace's LimitRanges default and bound containers.

As the real plugin does for `type: Container` items, on pod creation: a container that sets no
limit (request) for a resource gets the item's `default` (`defaultRequest`), and the pod is
annotated `kubernetes.io/limit-ranger` saying so; then every container must keep its request
at or above `min` and its limit at or below `max`, or the pod is refused ("pods "x" is
forbidden: maximum memory usage per Container is 256Mi, but limit is 512Mi"). A ReplicaSet
whose pods are refused reports FailedCreate, like a quota refusal. Pods already running are
never touched (admission runs on create only). `type: Pod` and `maxLimitRequestRatio` items
are not modelled.

The API server's defaulting of the LimitRange object itself (`default` from `max`,
`defaultRequest` from `default` or `min`) is applied here on read, so a LimitRange that only
sets `max` also sets every container's default limit, as in a real cluster.
"""

from __future__ import annotations

from typing import Any

from agents.model import JsonObject
from lab.kube import quantity, validation
from lab.kube.errors import Forbidden
from lab.kube.jsonutil import get_path
from lab.kube.resources import ResourceType
from lab.kube.store import Store

ANNOTATION = "kubernetes.io/limit-ranger"


def defaulted_item(item: JsonObject) -> JsonObject:
    """A Container item with the server's defaults (SetDefaults_LimitRangeItem)."""
    out: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in item.items()}
    if out.get("type") != "Container":
        return out
    default = out.setdefault("default", {})
    for resource, value in (out.get("max") or {}).items():
        default.setdefault(resource, value)
    default_request = out.setdefault("defaultRequest", {})
    for resource, value in default.items():
        default_request.setdefault(resource, value)
    for resource, value in (out.get("min") or {}).items():
        default_request.setdefault(resource, value)
    return out


def _amount(resource: str, text: str | None) -> int:
    return quantity.millis(text) if resource == "cpu" else quantity.value(text)


class LimitRanger:
    def __init__(self, store: Store) -> None:
        self.store = store

    def admit(self, rt: ResourceType, obj: JsonObject, old: JsonObject | None) -> None:
        if old is not None or rt.kind != "Pod":
            return
        namespace = obj["metadata"].get("namespace", "")
        items = [
            defaulted_item(item)
            for lr in sorted(
                self.store.iter_objects("LimitRange", namespace),
                key=lambda o: o["metadata"]["name"],
            )
            for item in get_path(lr, "spec", "limits", default=[])
            if item.get("type") == "Container"
        ]
        if not items:
            return
        self._default(obj, items)
        # Mutating admission runs before validation in a real server: a default limit below
        # the container's own request is refused by validation, so check again.
        validation.validate(rt, obj)
        errors = [e for item in items for e in self._violations(obj, item)]
        if errors:
            name = obj["metadata"].get("name", "")
            detail = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
            raise Forbidden(
                f'{rt.group_resource} "{name}" is forbidden: {detail}',
                name=name,
                group=rt.group,
                kind=rt.plural,
            )

    def _default(self, pod: JsonObject, items: list[JsonObject]) -> None:
        said: list[str] = []
        for container in get_path(pod, "spec", "containers", default=[]):
            resources = container.setdefault("resources", {})
            for section, key, noun in (
                ("defaultRequest", "requests", "request"),
                ("default", "limits", "limit"),
            ):
                added = []
                for item in items:
                    for resource, value in (item.get(section) or {}).items():
                        current = resources.setdefault(key, {})
                        if resource not in current:
                            current[resource] = value
                            added.append(resource)
                if added:
                    said.append(f"{', '.join(added)} {noun} for container {container['name']}")
            if not resources:
                container.pop("resources")
        if said:
            annotations = pod["metadata"].setdefault("annotations", {})
            annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(said)

    def _violations(self, pod: JsonObject, item: JsonObject) -> list[str]:
        errors: list[str] = []
        for container in get_path(pod, "spec", "containers", default=[]):
            requests = get_path(container, "resources", "requests", default={})
            limits = get_path(container, "resources", "limits", default={})
            for resource, bound in sorted((item.get("min") or {}).items()):
                observed = requests.get(resource)
                if observed is None:
                    errors.append(
                        f"minimum {resource} usage per Container is {bound}.  "
                        "No request is specified"
                    )
                elif _amount(resource, observed) < _amount(resource, bound):
                    errors.append(
                        f"minimum {resource} usage per Container is {bound}, "
                        f"but request is {observed}"
                    )
            for resource, bound in sorted((item.get("max") or {}).items()):
                observed = limits.get(resource)
                if observed is None:
                    errors.append(
                        f"maximum {resource} usage per Container is {bound}.  No limit is specified"
                    )
                elif _amount(resource, observed) > _amount(resource, bound):
                    errors.append(
                        f"maximum {resource} usage per Container is {bound}, "
                        f"but limit is {observed}"
                    )
        return errors
