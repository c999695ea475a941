"""Object bodies as the API server returns them, with managedFields."""

from __future__ import annotations

from typing import Any

from agents.model import KubeObject
from tests.agents.detection.fakes import at


def stamp(seconds: float) -> str:
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def managed(
    manager: str, seconds: float, fields: dict[str, Any], *, subresource: str | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "apps/v1",
        "time": stamp(seconds),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def creator(seconds: float = 0, manager: str = "kubectl-client-side-apply") -> dict[str, Any]:
    return managed(
        manager,
        seconds,
        {
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:spec": {
                        "f:containers": {
                            'k:{"name":"geo"}': {".": {}, "f:image": {}, "f:env": {}, "f:name": {}}
                        }
                    }
                },
            }
        },
    )


def deployment(
    name: str = "geo",
    *,
    image: str = "hotel/geo:1.0",
    replicas: int = 1,
    rv: str = "10",
    env: dict[str, str] | None = None,
    managers: list[dict[str, Any]] | None = None,
    namespace: str = "hotel",
    ready: int | None = None,
) -> KubeObject:
    container: dict[str, Any] = {"name": "geo", "image": image}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return KubeObject(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "resourceVersion": rv,
                "generation": 1,
                "uid": f"uid-{name}",
                "managedFields": managers if managers is not None else [creator()],
            },
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [container]},
                },
            },
            "status": {"readyReplicas": replicas if ready is None else ready},
        }
    )


def config_map(
    name: str = "geo-config",
    data: dict[str, str] | None = None,
    *,
    rv: str = "20",
    managers: list[dict[str, Any]] | None = None,
    namespace: str = "hotel",
) -> KubeObject:
    data = data if data is not None else {"DB_HOST": "mongodb-geo"}
    return KubeObject(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "resourceVersion": rv,
                "managedFields": managers
                if managers is not None
                else [managed("helm", 0, {"f:data": {f"f:{k}": {} for k in data}})],
            },
            "data": data,
        }
    )
